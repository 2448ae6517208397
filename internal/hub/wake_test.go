package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeWaiters subscribes three waiters to "ch", in order, with the given ids.
func threeWaiters(t *testing.T, srv *server, ids ...string) (*fence, []*Subscription) {
	rdb := newClient(t, srv)
	h := newHub(t, rdb)
	f := newFence(t, h, rdb)
	for len(ids) < 3 {
		ids = append(ids, "")
	}
	subs := make([]*Subscription, 3)
	for i := range subs {
		subs[i] = subscribe(t, h, "ch", ids[i])
	}
	return f, subs
}

func TestWakeOneRotates(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)

		// Each "1" wakes exactly one waiter, the longest waiting first.
		for round, want := range [][]bool{
			{true, false, false},
			{false, true, false},
			{false, false, true},
			{true, false, false},
		} {
			publish(t, f, "ch", One())
			assert.Equal(t, want, takeAll(w), "round %d", round)
		}

		// A waiter with a wake pending is passed over...
		publish(t, f, "ch", One()) // w1
		publish(t, f, "ch", One()) // w2
		publish(t, f, "ch", One()) // w0
		// ...and when all have one, "1" changes nothing.
		publish(t, f, "ch", One())
		assert.Equal(t, []bool{true, true, true}, takeAll(w))
		assert.Equal(t, []bool{false, false, false}, takeAll(w))
	})
}

func TestWakeAll(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		publish(t, f, "ch", All())
		assert.Equal(t, []bool{true, true, true}, takeAll(w))

		// Anything unrecognised is treated as "*".
		publish(t, f, "ch", "released by someone")
		assert.Equal(t, []bool{true, true, true}, takeAll(w))

		// Messages on other channels wake no one here.
		publish(t, f, "other", All())
		assert.Equal(t, []bool{false, false, false}, takeAll(w))
	})
}

func TestWakeN(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		publish(t, f, "ch", N(2))
		assert.Equal(t, []bool{true, true, false}, takeAll(w))

		// w2 has waited longest now, then w0.
		publish(t, f, "ch", N(2))
		assert.Equal(t, []bool{true, false, true}, takeAll(w))

		// Those with a pending wake are passed over: one pending, two woken.
		publish(t, f, "ch", One()) // w1
		publish(t, f, "ch", N(2))
		assert.Equal(t, []bool{true, true, true}, takeAll(w))

		publish(t, f, "ch", N(10))
		assert.Equal(t, []bool{true, true, true}, takeAll(w))

		publish(t, f, "ch", N(0))
		assert.Equal(t, []bool{false, false, false}, takeAll(w))
	})
}

func TestWakeNWeighs(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		w[0].SetWeight(3)
		w[2].SetWeight(2)

		// One permit wakes no waiter of 3: the light one behind it fits.
		publish(t, f, "ch", N(1))
		assert.Equal(t, []bool{false, true, false}, takeAll(w))

		// Three: w0 alone, the longest waiting; then five: w2 and w1 fit
		// after w0's 3 would not (w0 moved to the back).
		publish(t, f, "ch", N(3))
		assert.Equal(t, []bool{true, false, false}, takeAll(w))
		publish(t, f, "ch", N(3))
		assert.Equal(t, []bool{false, true, true}, takeAll(w))
		publish(t, f, "ch", N(6))
		assert.Equal(t, []bool{true, true, true}, takeAll(w))

		// A weight below 1 counts as 1; wake-one ignores weights.
		w[0].SetWeight(0)
		publish(t, f, "ch", N(1))
		assert.Equal(t, []bool{true, false, false}, takeAll(w))
		w[0].SetWeight(9)
		publish(t, f, "ch", One())
		assert.Equal(t, 1, countTrue(takeAll(w)))

	})
}

func TestCloseHandsOnWeight(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		w[0].SetWeight(4)
		w[1].SetWeight(2)
		w[2].SetWeight(2)
		publish(t, f, "ch", N(4))
		// w0 leaves without receiving its wake: its 4 permits wake w1 and w2.
		w[0].Close()
		assert.Equal(t, []bool{true, true}, []bool{take(w[1]), take(w[2])})
	})
}

// A wake that a waiter received and gives up (PassOn) goes to the
// longest-waiting other waiter that fits in its weight, past heavier ones:
// a heavier waiter woken in its place would try for more than the wake was
// for. When none fits, the longest-waiting one wakes all the same.
func TestPassOnFitsFirst(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		w[1].SetWeight(2)
		publish(t, f, "ch", N(1))
		require.Equal(t, []bool{true, false, false}, takeAll(w))
		w[0].PassOn()
		assert.Equal(t, []bool{false, false, true}, takeAll(w), "w2 fits, w1 does not")

		w[2].SetWeight(3)
		w[0].PassOn()
		assert.Equal(t, []bool{false, true, false}, takeAll(w), "none fits: the longest-waiting")
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestWakeTo(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv, "a", "b", "")
		publish(t, f, "ch", To("b", "hello world"))
		assert.Equal(t, []bool{false, true, false}, takeAll(w))
		assert.Equal(t, "hello world", w[1].Payload())
		assert.Equal(t, "", w[0].Payload())
		assert.Equal(t, "", w[2].Payload())

		// An empty payload is delivered as such.
		publish(t, f, "ch", To("b", ""))
		assert.Equal(t, []bool{false, true, false}, takeAll(w))
		assert.Equal(t, "", w[1].Payload())

		// No local waiter has the id: nothing happens.
		publish(t, f, "ch", To("nobody", "x"))
		assert.Equal(t, []bool{false, false, false}, takeAll(w))

		// Every waiter with the id is woken.
		w3 := subscribe(t, w[0].hub, "ch", "a")
		publish(t, f, "ch", To("a", "grant 7"))
		assert.Equal(t, []bool{true, false, false}, takeAll(w))
		require.True(t, take(w3))
		assert.Equal(t, "grant 7", w[0].Payload())
		assert.Equal(t, "grant 7", w3.Payload())
	})
}

func TestCloseHandsOnWake(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		f, w := threeWaiters(t, srv)
		publish(t, f, "ch", One())

		// w0 leaves without receiving its wake: it goes to w1, not lost.
		w[0].Close()
		assert.Equal(t, []bool{false, true, false}, []bool{len(w[0].C()) > 0, len(w[1].C()) > 0, len(w[2].C()) > 0})
		w[1].Close()
		assert.Equal(t, 1, len(w[2].C()), "the wake is passed on again")

		// A waiter that leaves without a wake wakes no one; Close is idempotent.
		require.True(t, take(w[2]))
		w[1].Close()
		w[0].Close()
		assert.False(t, take(w[2]))

		// The channel is still served.
		publish(t, f, "ch", One())
		assert.True(t, take(w[2]))
	})
}

// Deliver handles a message as if it had arrived on the channel, without
// one being published: "1" wakes the longest-waiting waiter and rotates
// it, "@ID PAYLOAD" only the waiters with ID; on a channel without
// waiters it wakes no one.
func TestDeliverAsIfReceived(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		w := []*Subscription{subscribe(t, h, "ch", ""), subscribe(t, h, "ch", "x"), subscribe(t, h, "ch", "")}
		h.Deliver("ch", One())
		assert.Equal(t, []bool{true, false, false}, takeAll(w))
		h.Deliver("ch", One())
		assert.Equal(t, []bool{false, true, false}, takeAll(w))
		h.Deliver("ch", To("x", "p"))
		assert.Equal(t, []bool{false, true, false}, takeAll(w))
		assert.Equal(t, "p", w[1].Payload())
		h.Deliver("other", One())
		assert.Equal(t, []bool{false, false, false}, takeAll(w))
	})
}

// Unwoken counts the waiters that the next wake-one message can wake: a
// waiter whose wake is pending is not one (an acquire that would join it
// without a try of its own must try: see acquire.queued).
func TestUnwoken(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *server) {
		rdb := newClient(t, srv)
		h := newHub(t, rdb)
		f := newFence(t, h, rdb)
		w := []*Subscription{subscribe(t, h, "ch", ""), subscribe(t, h, "ch", ""), subscribe(t, h, "ch", "")}
		assert.Equal(t, 3, h.Unwoken("ch"))
		assert.Equal(t, 3, h.Waiters("ch"))
		publish(t, f, "ch", One()) // w0
		assert.Equal(t, 2, h.Unwoken("ch"))
		publish(t, f, "ch", One()) // w1
		publish(t, f, "ch", One()) // w2
		assert.Zero(t, h.Unwoken("ch"))
		assert.Equal(t, 3, h.Waiters("ch"), "still waiting")
		assert.Equal(t, []bool{true, true, true}, takeAll(w))
		assert.Equal(t, 3, h.Unwoken("ch"), "the wakes taken")
		assert.Zero(t, h.Unwoken("other"))
	})
}
