package redcoord_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNewRejectsBadOptions(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	for name, opt := range map[string]redcoord.Option{
		"WithLeaseTTL":        redcoord.WithLeaseTTL(time.Millisecond),
		"WithPrefix":          redcoord.WithPrefix("a{b"),
		"WithPolling":         redcoord.WithPolling(0),
		"WithMaxPollInterval": redcoord.WithMaxPollInterval(-1),
		"WithLogger":          redcoord.WithLogger(nil),
		"opts":                nil,
	} {
		_, err := redcoord.New(rdb, opt)
		assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, name)
	}
	_, err := redcoord.New(nil)
	assert.ErrorIs(t, err, redcoord.ErrInvalidArgument)
	assert.ErrorContains(t, err, "rdb")
	var typedNil *redis.Client
	_, err = redcoord.New(typedNil)
	assert.ErrorIs(t, err, redcoord.ErrInvalidArgument, "a typed nil client")
}

func TestClientOptionsApply(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	ctx := context.Background()
	c, err := redcoord.New(rdb, redcoord.WithPrefix("app"), redcoord.WithLeaseTTL(90*time.Second))
	require.NoError(t, err)
	defer c.Close(ctx)
	assert.Equal(t, 90*time.Second, c.LeaseTTL())
	assert.Len(t, c.ID(), 32)
	m := rlock.New(c, "x")
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, int64(1), rdb.Exists(ctx, "app:{x}:lock").Val())
	assert.InDelta(t, 90*time.Second, rdb.PTTL(ctx, "app:{x}:lock").Val(), float64(time.Second))
	require.NoError(t, m.Unlock(ctx))

	polling, err := redcoord.New(rdb, redcoord.WithPolling(10*time.Millisecond))
	require.NoError(t, err)
	defer polling.Close(ctx)
	hub, err := polling.Hub()
	assert.NoError(t, err)
	assert.Nil(t, hub, "a polling Client has no Hub")
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	rdb := redistest.Mini(t).Client(t)
	ctx := context.Background()
	c, err := redcoord.New(rdb)
	require.NoError(t, err)
	holder := rlock.New(c, "n")
	require.NoError(t, holder.Lock(ctx))

	other, err := redcoord.New(rdb)
	require.NoError(t, err)
	defer other.Close(ctx)
	waiting := make(chan error, 1)
	go func() { waiting <- rlock.New(c, "n").Lock(ctx) }()
	for i := 0; i < 1000; i++ { // bounded: at most 10s
		if hub, _ := c.Hub(); hub != nil && hub.Stats().Waiters == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, c.Close(ctx))
	require.NoError(t, c.Close(ctx), "Close twice")
	err = <-waiting
	assert.ErrorIs(t, err, redcoord.ErrClosed, "a wait in progress ends")
	assert.ErrorIs(t, err, redcoord.ErrNotAcquired)
	assert.ErrorIs(t, holder.Unlock(ctx), redcoord.ErrClosed)
	_, err = c.Hub()
	assert.ErrorIs(t, err, redcoord.ErrClosed)
	locked, err := rlock.New(other, "n").IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "Close releases nothing: the hold expires by lease")
}
