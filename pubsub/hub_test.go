package pubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/pubsub"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The Client has one Hub: every call returns it, WithPolling has none, and
// a closed Client hands none out and ends the waits in progress.
func TestHubIsTheClients(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	c := locktest.NewClient(t, rdb, redcoord.WithMaxPollInterval(time.Hour))
	h1, err := c.Hub()
	require.NoError(t, err)
	h2, err := c.Hub()
	require.NoError(t, err)
	assert.Same(t, h1, h2)

	polling, err := locktest.NewClient(t, rdb, redcoord.WithPolling(time.Millisecond)).Hub()
	assert.NoError(t, err)
	assert.Nil(t, polling)

	waiting := make(chan error, 1)
	go func() {
		waiting <- h1.Wait(context.Background(), "never", func(context.Context) (bool, error) { return false, nil })
	}()
	locktest.Eventually(t, func() bool { return h1.Stats().Waiters == 1 }, "Wait subscribed")
	assert.Equal(t, pubsub.Stats{Channels: 1, Waiters: 1, Commands: 2}, h1.Stats(), "the probe and the channel")
	require.NoError(t, c.Close(context.Background()))
	select {
	case err := <-waiting:
		assert.ErrorIs(t, err, redcoord.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Wait")
	}
	_, err = c.Hub()
	assert.ErrorIs(t, err, redcoord.ErrClosed)
}

// Wait's contract on the public type: check's error as it is, ctx's end
// wrapped, a nil check refused.
func TestWaitEnds(t *testing.T) {
	srv := redistest.Mini(t)
	hub, err := locktest.NewClient(t, srv.Client(t), redcoord.WithMaxPollInterval(time.Millisecond)).Hub()
	require.NoError(t, err)

	boom := errors.New("boom")
	err = hub.Wait(context.Background(), "ch", func(context.Context) (bool, error) { return false, boom })
	assert.Same(t, boom, err)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = hub.Wait(ctx, "ch", func(context.Context) (bool, error) { return false, nil })
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	assert.ErrorIs(t, hub.Wait(context.Background(), "ch", nil), redcoord.ErrInvalidArgument)
	assert.Zero(t, hub.Stats().Waiters, "every Wait left its channel")
}

// Where an ACL refuses SUBSCRIBE, Wait polls and still returns, and
// Stats.Err says why with an error that matches ErrSubscribeRefused.
func TestRefusedWaitPolls(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	require.NoError(t, srv.Client(t).Do(ctx, "ACL", "SETUSER", "nopubsub", "on", ">pw", "~*", "+@all", "-@pubsub").Err())
	limited := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "nopubsub", "pw" })
	hub, err := locktest.NewClient(t, limited, redcoord.WithMaxPollInterval(time.Millisecond)).Hub()
	require.NoError(t, err)
	assert.NoError(t, hub.Stats().Err)

	calls := 0
	require.NoError(t, hub.Wait(ctx, "ch", func(context.Context) (bool, error) {
		calls++
		return calls == 3, nil
	}))
	st := hub.Stats()
	assert.True(t, st.Refused)
	assert.ErrorIs(t, st.Err, pubsub.ErrSubscribeRefused)
	assert.ErrorContains(t, st.Err, "NOPERM", "the server's reply is wrapped")
	assert.Zero(t, st.Waiters)
}

// Publish reaches a Wait on a real Cluster (SPUBLISH to SSUBSCRIBE, on the
// shard of the channel's slot) without its poll interval.
func TestPublishOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	rdb := cl.Client(t)
	hub, err := locktest.NewClient(t, rdb, redcoord.WithMaxPollInterval(time.Hour)).Hub()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	checks := make(chan struct{}, 2)
	woken := make(chan error, 1)
	go func() {
		woken <- hub.Wait(ctx, "{orders}:ready", func(ctx context.Context) (bool, error) {
			checks <- struct{}{}
			return rdb.Exists(ctx, "{orders}:flag").Val() == 1, nil
		})
	}()
	<-checks // subscribed, and the first check failed
	require.NoError(t, rdb.Set(ctx, "{orders}:flag", 1, 0).Err())
	require.NoError(t, pubsub.Publish(ctx, rdb, "{orders}:ready", "*"))
	require.NoError(t, <-woken)
	st := hub.Stats()
	assert.Equal(t, 1, st.Nodes, "a sharded connection, to the channel's primary")
	assert.Zero(t, st.Waiters)
}
