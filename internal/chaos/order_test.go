package chaos

import (
	"context"
	"net"
	"time"
)

// In the bubble, two goroutines that wake at one instant race to the
// server, and miniredis serves them in the scheduler's order. The suite
// keeps its own events apart (see apart in driver_test.go); orderedConn
// keeps apart two that go-redis puts together: it gives a connection the
// deadline of the command's context, so the context and the read would end
// at one instant, and whether the library sees a done context or an i/o
// timeout first would be the scheduler's choice. Deadlines here fall a
// nanosecond late: the context always ends first.
//
// A context with a deadline is withDeadline's: the library's timers that
// aim at the deadline fire at it, the connection's a nanosecond later, and
// the context ends a nanosecond after that.
//
// (Delaying writes per process, to order the tries of waiters that one
// message wakes, stops the bubble's clock: go-redis writes with its
// PubSub's mutex held, and a goroutine waiting for a mutex is not durably
// blocked.)

// orderedConn is one connection whose deadlines fall a nanosecond late.
type orderedConn struct{ net.Conn }

// orderedDialer wraps base.
func orderedDialer(base func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return orderedConn{c}, nil
	}
}

func lateBy(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(time.Nanosecond)
}

func (c orderedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(lateBy(t)) }
func (c orderedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(lateBy(t)) }
func (c orderedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(lateBy(t)) }

// lateCtx reports deadline as its deadline but ends two nanoseconds after
// it, with context.DeadlineExceeded.
type lateCtx struct {
	context.Context // cancelled two nanoseconds after deadline
	deadline        time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c lateCtx) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

// withDeadline returns a child of ctx (cancel cancels it) that ends d from
// now, two nanoseconds after the deadline it reports, and what ends it.
func withDeadline(ctx context.Context, cancel context.CancelFunc, d time.Duration) (context.Context, func()) {
	t := time.AfterFunc(d+2*time.Nanosecond, cancel)
	return lateCtx{Context: ctx, deadline: time.Now().Add(d)}, func() { t.Stop(); cancel() }
}
