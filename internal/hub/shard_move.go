package hub

import (
	"context"
	"time"

	"github.com/redcoord/redcoord/internal/backoff"
	"github.com/redcoord/redcoord/internal/obs"
)

// nodeLost drops n, whose connection failed, and moves its topics to the
// primaries that own their slots now (after a failover, a new one).
func (h *Hub) nodeLost(n *node, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropNodeLocked(n, err)
}

// dropNodeLocked is nodeLost under h.mu. It is also how a failed write ends
// a node: go-redis then reconnects by itself and resubscribes every channel
// of the connection in one SSUBSCRIBE, which fails when they span slots, so
// the connection is closed instead and its channels moved one by one.
func (h *Hub) dropNodeLocked(n *node, err error) {
	if n.dead {
		return
	}
	n.dead = true
	if h.nodes[n.addr] == n {
		delete(h.nodes, n.addr)
	}
	if h.closed {
		return // Close closes the connection
	}
	// Closed in the background: go-redis's PubSub may be redialling under
	// its own lock. Its reader then exits on the closed connection.
	h.workers.Add(1)
	go func() {
		defer h.workers.Done()
		_ = n.ps.Close()
		_ = n.client.Close()
	}()
	h.reconnects++
	h.opts.logger.Info("pubsub: shard connection lost; moving its channels", "addr", n.addr, "err", err)
	h.opts.observe.Emit(obs.Event{Kind: obs.HubReconnected, Count: len(h.topics), Err: err})
	h.cluster.ReloadState(h.bg)
	for _, t := range h.topics {
		if t.node == n && len(t.waiters) > 0 {
			h.moveLocked(t, "", 0)
		}
	}
}

// moveLocked resubscribes t on addr ("" for its slot's owner, as far as the
// cluster client knows) after delay, in the background, and wakes its
// waiters now and again when the move is confirmed: messages published
// meanwhile are lost, so they must re-check.
func (h *Hub) moveLocked(t *topic, addr string, delay time.Duration) {
	if t.node != nil && !t.moved {
		t.from = t.node.addr
	}
	t.node = nil
	h.gen++
	t.gen = h.gen
	t.moved = true
	if t.confirmed {
		t.confirmed = false
		t.ready = make(chan struct{})
	}
	t.wakeAll(unsent)
	h.workers.Add(1)
	go h.move(t.name, t.gen, addr, delay)
}

// move is moveLocked's goroutine. It retries while the topic still has
// waiters and has not been moved again, after a pause that doubles from
// twice delay (at least moveBackoff/20) up to moveBackoff; each attempt is
// bounded by the confirm timeout, and waiters poll meanwhile.
func (h *Hub) move(channel string, gen uint64, addr string, delay time.Duration) {
	defer h.workers.Done()
	pace := backoff.Backoff{First: min(max(2*delay, moveBackoff/20), moveBackoff), Max: moveBackoff}
	for {
		if delay > 0 && backoff.Sleep(h.bg, delay, h.quit) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(h.bg, h.opts.confirmTimeout)
		var err error
		if addr == "" {
			addr, err = h.ownerOf(ctx, channel)
		}
		h.mu.Lock()
		t := h.topics[channel]
		if h.closed || t == nil || t.gen != gen || len(t.waiters) == 0 {
			h.mu.Unlock()
			cancel()
			return
		}
		if err == nil {
			err = h.sendShardLocked(ctx, t, addr)
		}
		if err == nil {
			h.mu.Unlock()
			cancel()
			return
		}
		h.mu.Unlock()
		cancel()
		h.opts.logger.Debug("pubsub: moving a shard channel failed; retrying", "channel", channel, "addr", addr, "err", err)
		h.cluster.ReloadState(h.bg)
		addr = ""
		delay = pace.Next()
	}
}
