package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// healthInterval is how long a sharded connection may stay silent before
// the Hub pings it; a second silent interval after the ping counts as a
// lost connection.
const healthInterval = 30 * time.Second

// moveBackoff bounds the pause between two attempts to move a topic whose
// new home did not answer (a primary being failed over, a cluster down).
const moveBackoff = time.Second

// cluster is what the Hub needs of a *redis.ClusterClient for sharded
// pub/sub: the owner of a channel's slot and the options to dial it.
type cluster interface {
	Subscriber
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	Options() *redis.ClusterOptions
	ReloadState(ctx context.Context)
	ClusterSlots(ctx context.Context) *redis.ClusterSlotsCmd
}

// errNoOwner: CLUSTER SLOTS names no primary for a slot (cluster down).
var errNoOwner = errors.New("pubsub: no primary serves the slot")

// errResubscribed: a reply that answers no command of the Hub's, which
// means go-redis re-established the connection on its own.
var errResubscribed = errors.New("pubsub: go-redis resubscribed a shard connection by itself")

// PublishCommand returns the command that reaches a Hub built on rdb:
// SPUBLISH on a Redis Cluster client, whose Hub subscribes with SSUBSCRIBE,
// PUBLISH otherwise. A script that gets an error from SPUBLISH (a server
// before 7.0) should PUBLISH instead: the Hub then uses SUBSCRIBE.
func PublishCommand(rdb any) string {
	if _, ok := rdb.(cluster); ok {
		return "SPUBLISH"
	}
	return "PUBLISH"
}

// node is the Hub's sharded subscription connection to one primary. Every
// field but addr, ps and done is guarded by Hub.mu.
type node struct {
	addr   string
	client *redis.Client
	ps     *redis.PubSub
	done   chan struct{} // closed when the reader exits
	dead   bool          // the connection failed; its topics have moved
	// sent lists the SSUBSCRIBE and SUNSUBSCRIBE commands written and not
	// yet answered, in order: each has one channel and gets one reply, so
	// an error reply (which names no channel) is the head's.
	sent []sent
}

type sent struct {
	unsub   bool
	channel string
	gen     uint64 // the topic's generation when it was written
}

// moved reports whether err is a MOVED redirection, and its slot and
// address ("MOVED 3999 127.0.0.1:6381").
func moved(err error) (slot int, addr string, ok bool) {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return 0, "", false
	}
	f := strings.Fields(rerr.Error())
	if len(f) != 3 || f[0] != "MOVED" {
		return 0, "", false
	}
	slot, perr := strconv.Atoi(f[1])
	return slot, f[2], perr == nil
}

// isUnknownCommand reports whether the server does not know the command:
// SSUBSCRIBE before Redis 7.0.
func isUnknownCommand(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "ERR unknown command")
}

// probeShard checks that the cluster accepts SSUBSCRIBE, on the primary
// that owns the probe channel, with a connection of its own that it closes.
func (h *Hub) probeShard(ctx context.Context) error {
	ps := h.cluster.SSubscribe(ctx, h.opts.probe)
	defer func() { _ = ps.Close() }()
	msg, err := ps.ReceiveTimeout(ctx, h.opts.confirmTimeout)
	if err != nil {
		return err
	}
	if s, ok := msg.(*redis.Subscription); !ok || s.Kind != "ssubscribe" || s.Channel != h.opts.probe {
		return fmt.Errorf("unexpected reply %v", msg)
	}
	return nil
}

// shardOpened records that the probe passed: topics subscribe per node.
func (h *Hub) shardOpened() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.starting)
	h.starting = nil
	h.commands++ // the probe's SSUBSCRIBE
	if h.closed {
		return errs.ErrClosed
	}
	h.sharded = true
	return nil
}

// subscribeShardLocked subscribes t, whose first waiter just registered, on
// the primary that owns its slot.
func (h *Hub) subscribeShardLocked(ctx context.Context, t *topic) error {
	t.confirmed = false
	t.ready = make(chan struct{})
	owner, err := h.cluster.MasterForKey(ctx, t.name)
	if err != nil {
		return err
	}
	return h.sendShardLocked(ctx, t, owner.Options().Addr)
}

// sendShardLocked writes SSUBSCRIBE for t to the node at addr and makes t
// that node's. On error t has no node.
func (h *Hub) sendShardLocked(ctx context.Context, t *topic, addr string) error {
	n := h.nodeLocked(addr)
	h.commands++
	if err := n.ps.SSubscribe(ctx, t.name); err != nil {
		t.node = nil
		h.dropNodeLocked(n, err)
		return err
	}
	h.gen++
	t.gen, t.node = h.gen, n
	n.sent = append(n.sent, sent{channel: t.name, gen: t.gen})
	return nil
}

// unsubscribeShardLocked writes SUNSUBSCRIBE for t, whose last waiter left.
func (h *Hub) unsubscribeShardLocked(t *topic) {
	n := t.node
	t.node = nil
	if n == nil || n.dead {
		return
	}
	ctx, cancel := context.WithTimeout(h.bg, h.opts.confirmTimeout)
	defer cancel()
	h.commands++
	if err := n.ps.SUnsubscribe(ctx, t.name); err != nil {
		h.dropNodeLocked(n, err)
		return
	}
	n.sent = append(n.sent, sent{unsub: true, channel: t.name})
}

// nodeLocked returns the live connection to addr, opening one (and its
// reader) if there is none. The connection itself is dialled by the first
// command written to it.
func (h *Hub) nodeLocked(addr string) *node {
	if n := h.nodes[addr]; n != nil {
		return n
	}
	o := h.cluster.Options()
	client := redis.NewClient(&redis.Options{
		Addr: addr, ClientName: o.ClientName, Dialer: o.Dialer, OnConnect: o.OnConnect,
		Protocol: o.Protocol, Username: o.Username, Password: o.Password,
		CredentialsProvider: o.CredentialsProvider, CredentialsProviderContext: o.CredentialsProviderContext,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		TLSConfig: o.TLSConfig, DisableIdentity: o.DisableIdentity, IdentitySuffix: o.IdentitySuffix,
		PoolSize: 1, MaxRetries: -1, DialerRetries: 1,
	})
	n := &node{addr: addr, client: client, ps: client.SSubscribe(context.Background()), done: make(chan struct{})}
	h.nodes[addr] = n
	h.workers.Add(1)
	go h.readNode(n)
	return n
}

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
					t.wakeAll() // messages may have been lost while it moved
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
		i = slices.IndexFunc(n.sent, func(e sent) bool { return keySlot(e.channel) == slot })
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
	h.opts.logger.Warn("pubsub: server refused SSUBSCRIBE; its waiters will poll", "channel", t.name, "err", err)
	t.node = nil
	t.err = fmt.Errorf("%w: SSUBSCRIBE %q: %w", errs.ErrSubscribeRefused, t.name, err)
	t.markConfirmed()
}

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
	t.node = nil
	h.gen++
	t.gen = h.gen
	t.moved = true
	if t.confirmed {
		t.confirmed = false
		t.ready = make(chan struct{})
	}
	t.wakeAll()
	h.workers.Add(1)
	go h.move(t.name, t.gen, addr, delay)
}

// move is moveLocked's goroutine. It retries with a growing pause while the
// topic still has waiters and has not been moved again; each attempt is
// bounded by the confirm timeout, and waiters poll meanwhile.
func (h *Hub) move(channel string, gen uint64, addr string, delay time.Duration) {
	defer h.workers.Done()
	for {
		if delay > 0 {
			timer := time.NewTimer(delay)
			select {
			case <-timer.C:
			case <-h.quit:
				timer.Stop()
				return
			}
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
			h.moves++
			h.mu.Unlock()
			cancel()
			return
		}
		h.mu.Unlock()
		cancel()
		h.opts.logger.Debug("pubsub: moving a shard channel failed; retrying", "channel", channel, "addr", addr, "err", err)
		h.cluster.ReloadState(h.bg)
		addr = ""
		delay = min(max(2*delay, moveBackoff/20), moveBackoff)
	}
}
