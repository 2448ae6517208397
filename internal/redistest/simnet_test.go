package redistest

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// push is a script that appends its argument to the list l.
const push = "return redis.call('RPUSH', 'l', ARGV[1])"

// netWorld is a Bubble miniredis, a Net, and clients through it.
type netWorld struct {
	t   *testing.T
	m   *miniredis.Miniredis
	n   *Net
	opt *redis.Options
	cs  []*redis.Client
}

func newNetWorld(t *testing.T) *netWorld {
	m, opt := Bubble()
	w := &netWorld{t: t, m: m, n: NewNet(), opt: opt}
	t.Cleanup(func() {
		for _, c := range w.cs {
			_ = c.Close()
		}
		w.n.Close()
		m.Close()
	})
	return w
}

// client returns a client through the network; retries < 0: none.
func (w *netWorld) client(retries int) *redis.Client {
	o := *w.opt
	o.Dialer = w.n.Dialer(len(w.cs), w.opt.Dialer)
	o.MaxRetries = retries
	o.MinRetryBackoff, o.MaxRetryBackoff = -1, -1
	o.ReadTimeout = time.Second
	c := redis.NewClient(&o)
	w.cs = append(w.cs, c)
	return c
}

// list returns the list l as the server has it.
func (w *netWorld) list() []string {
	l, err := w.m.List("l")
	if err != nil && !errors.Is(err, miniredis.ErrKeyNotFound) {
		w.t.Fatal(err)
	}
	return l
}

func (w *netWorld) wantList(want ...string) {
	w.t.Helper()
	if got := w.list(); !slices.Equal(got, want) {
		w.t.Fatalf("list = %q, want %q", got, want)
	}
}

// A held request is applied after a request sent later on another
// connection, and its client gets the late reply.
func TestNetHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newNetWorld(t)
		a, b := w.client(-1), w.client(-1)
		for _, c := range []*redis.Client{a, b} { // connect: the handshake is not faulted
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		w.n.Arm(NetFault{Kind: NetHold, D: 300 * time.Millisecond})
		done := make(chan error)
		go func() { done <- a.Eval(ctx, push, nil, "a").Err() }()
		synctest.Wait()
		if err := b.Eval(ctx, push, nil, "b").Err(); err != nil {
			t.Fatal(err)
		}
		w.wantList("b")
		if err := <-done; err != nil {
			t.Fatalf("held request: %v, want its late reply", err)
		}
		w.wantList("b", "a")
		if w.n.Late() != 1 {
			t.Errorf("Late = %d, want 1", w.n.Late())
		}
	})
}

// A request held past its client's read deadline fails with a timeout, and
// is applied all the same, later.
func TestNetHoldPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newNetWorld(t)
		a := w.client(-1)
		w.n.Arm(NetFault{Kind: NetHold, D: 3 * time.Second})
		start := time.Now()
		err := a.Eval(ctx, push, nil, "a").Err()
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 1100*time.Millisecond {
			t.Fatalf("held request: %v after %v, want a timeout at the read deadline", err, time.Since(start))
		}
		w.wantList()
		if err := a.Eval(ctx, push, nil, "b").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		w.wantList("b", "a")
	})
}

// A duplicated request is applied twice.
func TestNetDup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newNetWorld(t)
		a := w.client(-1)
		w.n.Arm(NetFault{Kind: NetDup, D: 100 * time.Millisecond})
		if err := a.Eval(ctx, push, nil, "a").Err(); err != nil {
			t.Fatal(err)
		}
		w.wantList("a")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		w.wantList("a", "a")
	})
}

// A request dropped before the server is never applied; one dropped after
// it is applied and its reply lost. Each fails with a reset, or a timeout.
func TestNetDrop(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		for _, kind := range []NetKind{NetDropBefore, NetDropAfter} {
			t.Run(kind.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx := context.Background()
					w := newNetWorld(t)
					a := w.client(-1)
					w.n.Arm(NetFault{Kind: kind, Timeout: timeout})
					start := time.Now()
					err := a.Eval(ctx, push, nil, "a").Err()
					took := time.Since(start)
					switch {
					case timeout && (!errors.Is(err, os.ErrDeadlineExceeded) || took < time.Second):
						t.Fatalf("got %v after %v, want a timeout at the read deadline", err, took)
					case !timeout && (err == nil || errors.Is(err, os.ErrDeadlineExceeded) || took > 0):
						t.Fatalf("got %v after %v, want a reset at once", err, took)
					}
					time.Sleep(time.Second)
					synctest.Wait()
					if kind == NetDropBefore {
						w.wantList()
					} else {
						w.wantList("a")
					}
					// go-redis retries on a new connection, which works.
					b := w.client(3)
					w.n.Arm(NetFault{Kind: kind, Timeout: timeout})
					if err := b.Eval(ctx, push, nil, "b").Err(); err != nil {
						t.Fatalf("retried request: %v", err)
					}
				})
			})
		}
	}
}

// Pub/sub messages are dropped, duplicated or delayed whole, in order.
func TestNetMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newNetWorld(t)
		a := w.client(-1)
		sub := a.Subscribe(ctx, "ch")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		pub := redis.NewClient(w.opt)
		defer pub.Close()
		w.n.Arm(NetFault{Kind: NetMsgDrop})
		w.n.Arm(NetFault{Kind: NetMsgDup})
		w.n.Arm(NetFault{Kind: NetMsgDelay, D: 500 * time.Millisecond})
		for _, m := range []string{"1", "2", "3", "4"} {
			if err := pub.Publish(ctx, "ch", m).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		var at []time.Duration
		start := time.Now()
		for range 4 {
			m, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.Payload)
			at = append(at, time.Since(start))
		}
		if want := []string{"2", "2", "3", "4"}; !slices.Equal(got, want) {
			t.Fatalf("messages %q, want %q", got, want)
		}
		if at[1] != 0 || at[2] != 500*time.Millisecond || at[3] != 500*time.Millisecond {
			t.Errorf("messages came at %v, want 3 and 4 at 500ms, the rest at once", at)
		}
		if w.n.Faults() != 3 {
			t.Errorf("Faults = %d, want 3", w.n.Faults())
		}
	})
}

// A fault armed for the requests it matches passes the others by, and is
// taken by the first it matches.
func TestNetArmFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newNetWorld(t)
		a, b := w.client(-1), w.client(-1)        // tags 0 and 1
		for _, c := range []*redis.Client{a, b} { // connect: the handshake is not faulted
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		w.n.ArmFor(func(tag int, call string) bool { return tag == 1 }, NetFault{Kind: NetDup, D: 100 * time.Millisecond})
		if err := a.Eval(ctx, push, nil, "a").Err(); err != nil {
			t.Fatal(err)
		}
		if w.n.Aimed() != 1 {
			t.Fatalf("Aimed = %d after a request it does not match, want 1", w.n.Aimed())
		}
		for _, v := range []string{"b", "c"} {
			if err := b.Eval(ctx, push, nil, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		w.wantList("a", "b", "c", "b")
		w.n.ArmFor(func(int, string) bool { return true }, NetFault{Kind: NetDup, D: time.Millisecond})
		w.n.Disarm()
		if w.n.Aimed() != 0 {
			t.Fatalf("Aimed = %d after Disarm, want 0", w.n.Aimed())
		}
	})
}
