package hub

import (
	"context"
	"errors"
	"fmt"
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
