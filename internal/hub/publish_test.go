package hub

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// replyErr is an error reply from the server.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// fakeCluster is a cluster client whose SPUBLISH and PUBLISH answer as
// told, and which records what was sent.
type fakeCluster struct {
	*redis.ClusterClient
	spublishErr error
	sent        []string
}

func (f *fakeCluster) SPublish(ctx context.Context, channel string, msg any) *redis.IntCmd {
	f.sent = append(f.sent, "SPUBLISH")
	return redis.NewIntResult(1, f.spublishErr)
}

func (f *fakeCluster) Publish(ctx context.Context, channel string, msg any) *redis.IntCmd {
	f.sent = append(f.sent, "PUBLISH")
	return redis.NewIntResult(1, nil)
}

// Publish falls back to PUBLISH only where the server does not know
// SPUBLISH: there, and only there, the Hub subscribes with SUBSCRIBE.
func TestPublishFallsBack(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		sent    []string
		wantErr string
	}{
		{"SPUBLISH served", nil, []string{"SPUBLISH"}, ""},
		{"before 7.0", replyErr("ERR unknown command `SPUBLISH`, with args beginning with: "), []string{"SPUBLISH", "PUBLISH"}, ""},
		{"ACL", replyErr("NOPERM this user has no permissions to run the 'spublish' command"), []string{"SPUBLISH"}, "NOPERM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}) // never dialled
			defer cl.Close()
			f := &fakeCluster{ClusterClient: cl, spublishErr: c.err}
			assert.Equal(t, "SPUBLISH", PublishCommand(f))
			err := Publish(context.Background(), f, "rc:{a}:ch", "*")
			if c.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.wantErr)
			}
			assert.Equal(t, c.sent, f.sent)
		})
	}
}
