package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// DeadWaiter is one primitive's part in DeadRegistrationWokenOnce: how a
// holder takes and releases the name "n", how a live waiter waits and lets
// go, and the registration a crashed process left behind.
type DeadWaiter struct {
	Registry string            // the waiter registry's key, e.g. "rc:{n}:waiters"
	Member   string            // the crashed process's registration in it
	Also     map[string]string // other zsets' entries it left: key -> member (rrwlock's waiting writers)
	// Open makes the holder's and the live waiter's handles, the live one
	// on lc; hold takes the name (or its permits), release gives it back,
	// wait blocks as a waiter, done lets go of what wait got.
	Open func(hc, lc *redcoord.Client) (hold, release, wait, done func(context.Context) error)
}

// DeadRegistrationWokenOnce checks, on a real server, that a release wakes
// the registered waiter whose deadline comes first, in its own process, and
// that when that process is gone (a crashed process's registration, which
// lives until its heartbeat deadline) the wake is lost once: the live
// waiter gets the name on its timer, and the dead registration is not
// woken again. The process crashed just after its last renewal, so its
// registration still looks as fresh as a live one (the Client's TTL is
// the default, 30s).
func DeadRegistrationWokenOnce(t *testing.T, d DeadWaiter) {
	t.Helper()
	srv := redistest.Real(t)
	ctx := context.Background()
	const poll = 200 * time.Millisecond
	hc := NewClient(t, srv.Client(t))
	lc := NewClient(t, srv.Client(t), redcoord.WithMaxPollInterval(poll))
	hold, release, wait, done := d.Open(hc, lc)
	probe := srv.Client(t)

	require.NoError(t, hold(ctx))
	// The crashed process's registration comes first: its deadline is
	// sooner than the live waiter's (a lease TTL from its registration),
	// by less than a watchdog tick.
	deadline := float64(time.Now().Add(29 * time.Second).UnixMilli())
	require.NoError(t, probe.ZAdd(ctx, d.Registry, redis.Z{Score: deadline, Member: d.Member}).Err())
	for key, member := range d.Also {
		require.NoError(t, probe.ZAdd(ctx, key, redis.Z{Score: deadline, Member: member}).Err())
	}
	liveDone := make(chan error, 1)
	go func() { liveDone <- wait(ctx) }()
	Eventually(t, func() bool { return probe.ZCard(ctx, d.Registry).Val() == 2 }, "the live waiter registered")

	require.NoError(t, release(ctx)) // wakes the crashed process's registration, the first
	select {
	case err := <-liveDone:
		require.NoError(t, err, "the live waiter gets the name on its timer")
	case <-time.After(redistest.Patience(10 * time.Second)):
		t.Fatal("the live waiter was stranded by a wake sent to a dead process")
	}
	assert.Zero(t, probe.ZCard(ctx, d.Registry).Val(), "the woken registration is gone, the live one took the name")
	require.NoError(t, done(ctx))
}
