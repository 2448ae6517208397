package rsemaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rsemaphore"
)

// The semaphores TestLinearizability and TestLinearizabilityExpirable
// record histories on.

// linWait runs a blocking acquire that waits at most 1 to 20ms; one that
// timed out, wherever it was, returns an error matching
// context.DeadlineExceeded.
func linWait(ctx context.Context, rng *rand.Rand, acquire func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, time.Duration(1+rng.IntN(20))*time.Millisecond)
	defer cancel()
	err := acquire(wctx)
	if err != nil && wctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w (%w)", wctx.Err(), err) // a read timed out by the deadline
	}
	return err
}

// linCounting is a Semaphore, a handle per goroutine.
type linCounting struct{ sems []*rsemaphore.Semaphore }

func (*linCounting) scripts() (string, string) { return "sem_acquire", "sem_release" }
func (*linCounting) maxN() int                 { return 3 }

func (c *linCounting) open(t *testing.T, ctx context.Context, clients []*redcoord.Client, goroutines int) {
	for g := range goroutines {
		c.sems = append(c.sems, rsemaphore.New(clients[g%len(clients)], "linear"))
	}
	require.NoError(t, c.sems[0].SetPermits(ctx, linTotal))
	require.NoError(t, c.sems[0].Acquire(ctx, 1))
	require.NoError(t, c.sems[0].Release(ctx, 1))
}

func (c *linCounting) apply(ctx context.Context, in linInput, rng *rand.Rand) (bool, error) {
	s, n := c.sems[in.who], int64(in.n)
	switch {
	case !in.take:
		return true, s.Release(ctx, n)
	case in.try:
		return s.TryAcquire(ctx, n)
	}
	err := linWait(ctx, rng, func(ctx context.Context) error { return s.Acquire(ctx, n) })
	return err == nil, err
}

func (c *linCounting) available(ctx context.Context) (int64, error) {
	st, err := c.sems[0].State(ctx)
	if err == nil && st.Waiting != 0 {
		err = fmt.Errorf("%d waiters left queued", st.Waiting)
	}
	return st.Available, err
}

// linExpirable is an ExpirableSemaphore, a handle per goroutine, with the
// permits each goroutine holds.
type linExpirable struct {
	sems []*rsemaphore.ExpirableSemaphore
	held [][]rsemaphore.Permit // by goroutine; each touches its own only
}

func (*linExpirable) scripts() (string, string) { return "xsem_acquire", "xsem_release" }
func (*linExpirable) maxN() int                 { return 1 }

func (x *linExpirable) open(t *testing.T, ctx context.Context, clients []*redcoord.Client, goroutines int) {
	for g := range goroutines {
		x.sems = append(x.sems, rsemaphore.NewExpirable(clients[g%len(clients)], "linear"))
	}
	x.held = make([][]rsemaphore.Permit, goroutines)
	require.NoError(t, x.sems[0].SetPermits(ctx, linTotal))
	p, err := x.sems[0].Acquire(ctx, rsemaphore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, x.sems[0].Release(ctx, p))
}

func (x *linExpirable) apply(ctx context.Context, in linInput, rng *rand.Rand) (bool, error) {
	s, mine := x.sems[in.who], x.held[in.who]
	if !in.take {
		i := rng.IntN(len(mine))
		if err := s.Release(ctx, mine[i]); err != nil {
			return false, err
		}
		x.held[in.who] = append(mine[:i], mine[i+1:]...)
		return true, nil
	}
	var opts rsemaphore.AcquireOptions
	if rng.IntN(2) == 0 {
		opts.Lease = time.Hour
	}
	var (
		p   rsemaphore.Permit
		ok  bool
		err error
	)
	if in.try {
		p, ok, err = s.TryAcquire(ctx, opts)
	} else {
		err = linWait(ctx, rng, func(ctx context.Context) error {
			p, err = s.Acquire(ctx, opts)
			return err
		})
		ok = err == nil
	}
	if ok {
		x.held[in.who] = append(mine, p)
	}
	return ok, err
}

func (x *linExpirable) available(ctx context.Context) (int64, error) {
	return x.sems[0].Available(ctx)
}
