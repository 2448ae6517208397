package hub

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// PublishCommand returns the command that reaches a Hub built on rdb:
// SPUBLISH on a Redis Cluster client, whose Hub subscribes with SSUBSCRIBE,
// PUBLISH otherwise. A script that gets an error from SPUBLISH (a server
// before 7.0) should PUBLISH instead: the Hub then uses SUBSCRIBE.
func PublishCommand(rdb any) string {
	if _, ok := rdb.(cluster); ok {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// Publish sends message on channel with PublishCommand(rdb). Where the server
// does not know SPUBLISH (a cluster before Redis 7.0, on which the Hub's probe
// found no sharded pub/sub and uses SUBSCRIBE) it sends PUBLISH instead.
// Any other error is returned, wrapped.
func Publish(ctx context.Context, rdb redis.Cmdable, channel, message string) error {
	if PublishCommand(rdb) == "SPUBLISH" {
		err := rdb.SPublish(ctx, channel, message).Err()
		if !isUnknownCommand(err) {
			return wrapPublish("SPUBLISH", channel, err)
		}
	}
	return wrapPublish("PUBLISH", channel, rdb.Publish(ctx, channel, message).Err())
}

func wrapPublish(cmd, channel string, err error) error {
	if err != nil {
		return fmt.Errorf("pubsub: %s %q: %w", cmd, channel, err)
	}
	return nil
}
