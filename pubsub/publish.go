package pubsub

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/hub"
)

// PublishCommand returns the command that reaches the Hub of a Client built
// on rdb: "SPUBLISH" for a *redis.ClusterClient, whose Hub subscribes with
// SSUBSCRIBE, "PUBLISH" otherwise. It is for Lua scripts that wake waiters
// themselves; pass it as an argument. Where SPUBLISH fails (a cluster before
// Redis 7.0, whose Hub uses SUBSCRIBE) the script should PUBLISH instead:
//
//	local r = redis.pcall(ARGV[1], KEYS[1], '*')
//	if ARGV[1] == 'SPUBLISH' and type(r) == 'table' and r.err then
//	  redis.pcall('PUBLISH', KEYS[1], '*')
//	end
func PublishCommand(rdb any) string { return hub.PublishCommand(rdb) }

// Publish sends message on channel with the command PublishCommand(rdb)
// returns, so that it reaches the Waits of every Client on rdb's server or
// cluster; on a cluster that does not know SPUBLISH (before Redis 7.0) it
// sends PUBLISH. rdb is the go-redis client itself (not a pipeline, whose
// commands fail only at Exec). Publish after the change that Wait's check
// looks for, never before. It returns Redis's error, wrapped.
//
// See the package documentation for what a message wakes: any text but the
// library's own ("1", and messages that begin with "n:" or "@") wakes every
// Wait on channel; "*" is the convention.
func Publish(ctx context.Context, rdb redis.Cmdable, channel, message string) error {
	return hub.Publish(ctx, rdb, channel, message)
}
