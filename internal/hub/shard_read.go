package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// readNode is a node's reader goroutine. It returns when the connection
// fails or is closed, after dropping the node.
func (h *Hub) readNode(n *node) {
	defer h.workers.Done()
	defer close(n.done)
	ctx := h.bg // Close cancels it, and with it a dial in progress
	pinged := false
	for {
		msg, err := n.ps.ReceiveTimeout(ctx, healthInterval)
		var rerr redis.Error
		var nerr net.Error
		switch {
		case err == nil:
			pinged = false
			h.handleNode(n, msg)
		case errors.As(err, &rerr):
			h.nodeError(n, err)
		case errors.As(err, &nerr) && nerr.Timeout() && !pinged:
			pinged = true
			if err := n.ps.Ping(ctx); err != nil {
				h.nodeLost(n, err)
				return
			}
		default:
			h.nodeLost(n, err)
			return
		}
	}
}

// handleNode dispatches one message or confirmation read from n.
func (h *Hub) handleNode(n *node, msg any) {
	if m, ok := msg.(*redis.Message); ok {
		h.heed(m.Payload)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || n.dead {
		return
	}
	switch m := msg.(type) {
	case *redis.Message:
		h.deliverLocked(m.Channel, m.Payload)
	case *redis.Subscription:
		switch m.Kind {
		case "ssubscribe":
			e, ok := n.answered(false, m.Channel)
			if !ok {
				// No SSUBSCRIBE of ours: go-redis reconnected and resubscribed
				// on its own, in one command that spans slots.
				h.dropNodeLocked(n, errResubscribed)
				return
			}
			t := h.topics[m.Channel]
			if ok && t != nil && t.node == n && t.gen == e.gen {
				t.markConfirmed()
				if t.moved {
					t.moved = false
					t.wakeAll(unsent) // messages may have been lost while it moved
					if n.addr != t.from {
						h.moves++
						h.opts.observe.Emit(obs.Event{Kind: obs.HubMoved, Name: t.name})
					}
					t.from = ""
				}
			}
		case "sunsubscribe":
			if _, ok := n.answered(true, m.Channel); ok {
				return
			}
			// Not ours: the server dropped the channel because its slot
			// moved to another node, or this node is no longer a primary.
			if t := h.topics[m.Channel]; t != nil && t.node == n && len(t.waiters) > 0 {
				h.opts.logger.Info("pubsub: shard channel moved", "channel", m.Channel, "from", n.addr)
				h.moveLocked(t, "", 0)
			}
		}
	}
}

// answered removes from n.sent the oldest command matching the reply, and
// reports whether there was one.
func (n *node) answered(unsub bool, channel string) (sent, bool) {
	for i, e := range n.sent {
		if e.unsub == unsub && e.channel == channel {
			n.sent = append(n.sent[:i:i], n.sent[i+1:]...)
			return e, true
		}
	}
	return sent{}, false
}

// nodeError handles an error reply on n: the answer to the oldest command
// not yet answered.
func (h *Hub) nodeError(n *node, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || n.dead {
		return
	}
	i := 0
	slot, addr, isMoved := moved(err)
	if isMoved {
		// MOVED names the slot: the reply is to the oldest command for a
		// channel of that slot. (A SUNSUBSCRIBE crossed by the server's own
		// unsubscribe of a migrated slot is answered so, and must not be
		// charged to the command after it.)
		i = slices.IndexFunc(n.sent, func(e sent) bool { return KeySlot(e.channel) == slot })
	}
	if i < 0 {
		return // a late reply to a SUNSUBSCRIBE that the server's own crossed
	}
	if len(n.sent) == 0 || strings.HasPrefix(err.Error(), "CROSSSLOT") {
		// Not the reply to any command of ours, each of which names one
		// channel: go-redis reconnected and resubscribed on its own.
		h.dropNodeLocked(n, fmt.Errorf("%w: %w", errResubscribed, err))
		return
	}
	e := n.sent[i]
	n.sent = slices.Delete(n.sent, i, i+1)
	t := h.topics[e.channel]
	if e.unsub || t == nil || t.node != n || t.gen != e.gen {
		return
	}
	if isMoved {
		h.moveLocked(t, addr, 0)
		return
	}
	if !isRefusal(err) {
		h.moveLocked(t, "", moveBackoff/10)
		return
	}
	// Refused (an ACL on this channel): its waiters poll.
	h.opts.logger.Log(context.Background(), h.opts.refusalLevel,
		"pubsub: server refused SSUBSCRIBE; its waiters will poll", "channel", t.name, "err", err)
	t.node = nil
	t.err = &errs.Error{Sentinel: errs.ErrSubscribeRefused, Op: fmt.Sprintf("SSUBSCRIBE %q", t.name), Cause: err}
	t.markConfirmed()
}
