package core

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/hub"
)

type forcible struct{ upTo uint64 }

func (f *forcible) ForcedUpTo(token uint64) { f.upTo = max(f.upTo, token) }

// A notice that names a lock hold no hold of its owner has recorded yet is
// kept: a grant of that hold taken later is not trusted (Told), and its
// Add reports it forced; a later hold of the owner is not. Without a
// subscription that heard the Client's channel first, nothing is trusted.
func TestNoticeBeforeTheHoldIsRecorded(t *testing.T) {
	s := &Session{ID: "c1"}
	s.Config.Prefix = "rc"
	s.Config.Polling = true // no listener starts: Add only lists
	n := newNotices(s)
	assert.False(t, n.Told(nil, "c1:1", 5), "no subscription: ask Redis")

	n.Hear("l c1:1 5")
	n.Hear("l c1:2 9")
	f := &forcible{}
	assert.True(t, n.Add(Held{Owner: "c1:1"}, f, 5), "the hold of token 5 was forced before it was recorded")
	assert.False(t, n.Add(Held{Owner: "c1:1"}, f, 6), "the record is spent, and a later hold is not the one forced")
	assert.False(t, n.Add(Held{Owner: "c1:2"}, f, 10), "a later hold of another owner")
	n.Hear("r c1:3 4")
	assert.False(t, n.Add(Held{Owner: "c1:3"}, f, 4), "a read hold's notice is not a lock hold's")
	n.Hear("l c1:1 7")
	assert.Equal(t, uint64(7), f.upTo, "a listed hold is told at once")
}

// Told trusts a grant that woke a subscription only once the Client's own
// channel is subscribed ahead of it, and not after a notice named the
// grant's hold or a later one of its owner.
func TestToldNeedsTheChannelAndNoNotice(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := New(rdb, Config{TTL: time.Second, Prefix: "rc", PollInterval: time.Second, Logger: slog.Default()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := context.Background()
	h, err := s.Hub()
	require.NoError(t, err)
	sub, err := h.Subscribe(ctx, "grants", "r1")
	require.NoError(t, err)
	defer sub.Close()
	grant := func() {
		t.Helper()
		require.NoError(t, rdb.Publish(ctx, "grants", hub.To("r1", "7 1")).Err())
		select {
		case <-sub.C():
		case <-time.After(5 * time.Second):
			t.Fatal("no grant")
		}
	}
	grant()
	assert.False(t, s.Notices.Told(sub, "o", 7), "the Client's channel is not subscribed")

	require.NoError(t, h.Pin(ctx, s.ClientKey(ChanNotices, s.ID)))
	grant()
	assert.True(t, s.Notices.Told(sub, "o", 7))
	s.Notices.Hear("l o 6")
	assert.True(t, s.Notices.Told(sub, "o", 7), "a notice of an earlier hold")
	s.Notices.Hear("l o 7")
	assert.False(t, s.Notices.Told(sub, "o", 7), "a notice of the granted hold")
	assert.True(t, s.Notices.Told(sub, "p", 7), "another owner's")
}
