package hub

import (
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/obs"
)

// read is the reader goroutine: it dispatches until go-redis closes msgs,
// which it does once the PubSub is closed.
func (h *Hub) read(msgs <-chan any, done chan struct{}) {
	defer close(done)
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirm(m.Channel, m.Count)
			}
		}
	}
}

// deliver wakes the waiters of channel that message payload asks for,
// after passing a notice to the notice handler.
func (h *Hub) deliver(channel, payload string) {
	h.heed(payload)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliverLocked(channel, payload)
}

// Deliver handles payload as if it had arrived on channel, through the
// path of a received message: for a script that left, in its reply, a
// message for this process's own channel instead of publishing it (a
// release whose next waiter is in this process). A message that finds no
// waiter wakes no one, as one received would.
func (h *Hub) Deliver(channel, payload string) {
	h.deliver(channel, payload)
}

// heed passes payload's body to the notice handler, if payload is a notice
// and there is one; the caller does not hold mu.
func (h *Hub) heed(payload string) {
	if body, ok := notice(payload); ok && h.opts.notice != nil {
		h.opts.notice(body)
	}
}

func (h *Hub) deliverLocked(channel, payload string) {
	t := h.topics[channel]
	if t == nil || len(t.waiters) == 0 {
		return
	}
	at := h.clock()
	switch m := parse(payload); m.kind {
	case wakeOne:
		t.wakeOne(at)
	case wakeN:
		t.wakeN(m.n, at)
	case wakeTo:
		h.handled++
		for _, s := range t.waiters {
			if s.id == m.id {
				s.told, s.toldOn = h.handled, h.reconnects
				s.payload.Store(&m.payload)
				s.wake(at)
			}
		}
	default:
		t.wakeAll(at)
	}
}

// confirm handles the server's confirmation of a SUBSCRIBE. count is the
// number of subscriptions the connection has after it. The probe channel is
// subscribed first and never left, so count is 1 only for the first
// confirmation on a new connection: go-redis reconnected and is
// resubscribing every channel in one command. SUBSCRIBEs written to the old
// connection were lost, so the pending counts restart at 0; a confirmation
// that finds pending at 0 is such a resubscription, and wakes every waiter
// of its channel, since messages may have been lost in the gap.
//
// Erring low is safe: a confirmation attributed to an earlier SUBSCRIBE lets
// a waiter start early, but the later confirmation then finds pending at 0
// and wakes it. Erring high would leave waiters to the confirm timeout.
func (h *Hub) confirm(channel string, count int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if count == 1 {
		h.reconnects++
		h.opts.logger.Info("pubsub: connection re-established; waiters are woken as their channels are resubscribed")
		h.opts.observe.Emit(obs.Event{Kind: obs.HubReconnected, Count: len(h.topics)})
		for name, t := range h.topics {
			t.pending = 0
			if len(t.waiters) == 0 && !t.lingering && !t.pinned {
				delete(h.topics, name)
			}
		}
	}
	t := h.topics[channel]
	if t == nil {
		return // the probe channel, or a channel every waiter has left
	}
	h.handled++
	t.heard, t.heardOn = h.handled, h.reconnects
	if t.pending > 0 {
		t.pending--
		switch {
		case len(t.waiters) == 0:
			if t.pending == 0 {
				delete(h.topics, channel)
			}
		case t.pending == 0:
			t.markConfirmed()
		}
		return
	}
	t.markConfirmed()
	t.wakeAll(unsent)
}
