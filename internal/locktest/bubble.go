package locktest

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/redistest"
)

// Proc is one process of a test: its own connections (with a fault set and
// a round-trip counter) and its own Client.
type Proc struct {
	RDB    *redis.Client
	C      *redcoord.Client
	Faults *redistest.Faults
	RT     *redistest.RoundTrips
}

// NewProc returns a process on the server opts dials, its Client made with
// copts. Kill stops it.
func NewProc(t testing.TB, opts *redis.Options, copts ...redcoord.Option) *Proc {
	p := &Proc{Faults: redistest.NewFaults(), RT: &redistest.RoundTrips{}}
	o := *opts
	o.Dialer = p.Faults.Dialer(opts.Dialer)
	p.RDB = redis.NewClient(&o)
	p.RDB.AddHook(p.RT)
	c, err := redcoord.New(p.RDB, copts...)
	require.NoError(t, err)
	p.C = c
	return p
}

// Kill stops the process without any clean-up reaching Redis: its
// connections close first, so the leave script of a wait in progress
// fails, then its Client stops, and with it the watchdog's renewals.
func (p *Proc) Kill() {
	_ = p.RDB.Close()
	_ = p.C.Close(context.Background())
}

// InBubble runs f in a testing/synctest bubble with n processes on one
// miniredis whose clock is the bubble's (redistest.Bubble), so durations
// are exact. Every process is killed when f returns.
func InBubble(t *testing.T, n int, f func(t *testing.T, mr *miniredis.Miniredis, ps []*Proc)) {
	synctest.Test(t, func(t *testing.T) {
		mr, opts := redistest.Bubble()
		defer mr.Close()
		ps := make([]*Proc, n)
		for i := range ps {
			ps[i] = NewProc(t, opts)
			defer ps[i].Kill()
		}
		f(t, mr, ps)
	})
}
