package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

// retryDelay is how long Subscribe fails fast with ErrSubscribeRefused after
// the Hub could not open its connection for a reason other than a refusal
// (no confirmation in time, a network error). Without it a proxy that
// swallows SUBSCRIBE would cost every acquire a full confirm timeout.
const retryDelay = 30 * time.Second

// Subscriber is what the Hub needs of a go-redis client: *redis.Client,
// *redis.ClusterClient and failover clients all satisfy it.
type Subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Hub multiplexes the subscriptions of one process (one redcoord Client) onto
// a single pub/sub connection. It is safe for concurrent use.
type Hub struct {
	rdb     Subscriber
	cluster cluster // rdb, when it is a Redis Cluster client
	opts    options
	quit    chan struct{}   // closed by Close
	bg      context.Context // the background work's context; cancelled by Close
	stop    context.CancelFunc
	born    time.Time // when New made it: the origin of the wakes' dates (see clock)

	mu         sync.Mutex // guards the fields below and every topic and Subscription
	closed     bool
	refused    error         // non-nil once the server refused SUBSCRIBE: permanent
	retryErr   error         // why the last open failed; returned until retryAt
	retryAt    time.Time     // see retryDelay
	starting   chan struct{} // non-nil while one caller opens the connection
	ps         *redis.PubSub // nil until the first Subscribe; never reset
	done       chan struct{} // closed when the reader goroutine exits; nil before
	topics     map[string]*topic
	reconnects int64
	commands   int64 // SUBSCRIBE and UNSUBSCRIBE sent
	// handled counts the confirmations and targeted messages handled, in
	// the order read; with reconnects, the connection they came on, it
	// dates a topic's last confirmation and a subscription's last
	// targeted message (see Subscription.Heard).
	handled int64

	// Sharded pub/sub, on a cluster whose probe accepted SSUBSCRIBE: one
	// connection per primary instead of ps.
	sharded bool
	nodes   map[string]*node // by address
	gen     uint64           // last topic generation handed out
	moves   int64
	workers sync.WaitGroup // node readers and topic movers
}

// Stats is a snapshot of a Hub, for tests and operators.
type Stats struct {
	Channels   int   // channels with at least one waiter
	Waiters    int   // registered Subscriptions
	Reconnects int64 // times go-redis re-established the connection
	Refused    bool  // the server refused SUBSCRIBE; every wait polls
	// Err is why waits poll, nil while the Hub can subscribe: an error
	// wrapping ErrSubscribeRefused and the server's reply. It stays set
	// once the server refused (Refused); after a failure to connect or to
	// confirm, until the Hub tries again (see retryDelay).
	Err error
	// Commands is how many SUBSCRIBE and UNSUBSCRIBE commands (SSUBSCRIBE
	// and SUNSUBSCRIBE on Cluster) the Hub has sent, the probe's included:
	// traffic that go-redis hooks do not see.
	Commands int64
	// Nodes is how many sharded connections are open (one per primary that
	// owns a channel waited on; 0 outside Cluster).
	Nodes int
	// Moves is how many times a shard channel was resubscribed, and
	// confirmed, on another node than before: its slot moved, or its
	// primary failed over (each is also an obs.HubMoved).
	Moves int64
}

// New returns a Hub that subscribes through rdb. It does no I/O: the
// connection is opened by the first Subscribe.
func New(rdb Subscriber, opts ...Option) (*Hub, error) {
	if rdb == nil {
		return nil, errs.Invalid("rdb", "must not be nil")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	h := &Hub{
		rdb:    rdb,
		opts:   o,
		quit:   make(chan struct{}),
		topics: make(map[string]*topic),
		nodes:  make(map[string]*node),
		born:   time.Now(),
	}
	h.cluster, _ = rdb.(cluster)
	h.bg, h.stop = context.WithCancel(context.Background())
	return h, nil
}

// unsent is the date of a wake that no message asked for (see Subscription.Woke).
const unsent = 0

// clock returns the date of a wake given now: how long since the Hub was
// made, by the monotonic clock, plus 1 ns, so that it is never unsent.
func (h *Hub) clock() int64 {
	return int64(time.Since(h.born)) + 1
}

// Stats returns a snapshot of the Hub's state.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Reconnects: h.reconnects, Refused: h.refused != nil, Err: h.refused, Commands: h.commands,
		Nodes: len(h.nodes), Moves: h.moves}
	if st.Err == nil && time.Now().Before(h.retryAt) {
		st.Err = h.retryErr
	}
	for _, t := range h.topics {
		if n := t.counted(); n > 0 {
			st.Channels++
			st.Waiters += n
		}
	}
	return st
}

// Polls reports whether the Hub's waiters poll now: the server refused its
// subscriptions for good, or its connection failed and it has not tried
// again yet (see Stats.Err).
func (h *Hub) Polls() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused != nil || time.Now().Before(h.retryAt)
}

// Waiters returns the number of waiters registered on channel. It never
// blocks: while the Hub is busy (writing SUBSCRIBE, say) it reports 0.
func (h *Hub) Waiters(channel string) int { return h.count(channel, (*topic).counted) }

// Unwoken returns the number of waiters registered on channel that have
// no pending wake: those the next wake-one message can wake. It never
// blocks: while the Hub is busy it reports 0.
func (h *Hub) Unwoken(channel string) int { return h.count(channel, (*topic).unwoken) }

// count returns what of says of channel's topic, 0 when there is none or
// the Hub is busy: it never blocks.
func (h *Hub) count(channel string, of func(*topic) int) int {
	if !h.mu.TryLock() {
		return 0
	}
	defer h.mu.Unlock()
	if t := h.topics[channel]; t != nil {
		return of(t)
	}
	return 0
}

// WakeOne wakes the longest-waiting waiter of channel that has no pending
// wake, as a wake-one message would, without a message: for a caller that
// knows a waiter here must check again.
func (h *Hub) WakeOne(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if t := h.topics[channel]; t != nil {
		t.wakeOne(h.clock())
	}
}

// WakeN wakes waiters of channel as the message "n:K" (N(k)) would,
// without a message: for a caller that would have sent it to itself.
func (h *Hub) WakeN(channel string, k int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if t := h.topics[channel]; t != nil {
		t.wakeN(k, h.clock())
	}
}

// WakeFree is for a caller that knows n permits are free here: the
// waiters of channel with a pending wake will try for their weights'
// worth of them; with what is left it wakes the waiters that fit,
// longest-waiting first, as "n:K" would, without a message, and never one
// that does not fit.
func (h *Hub) WakeFree(channel string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	t := h.topics[channel]
	if t == nil {
		return
	}
	for _, s := range t.waiters {
		if len(s.c) > 0 {
			n -= s.weight
		}
	}
	if n > 0 {
		t.wake(n, true, h.clock())
	}
}

// Close closes the subscription connection, wakes every registered waiter
// (and makes Wait return ErrClosed), and waits for the reader goroutine to
// exit or ctx to end. Later Subscribe calls return ErrClosed; Subscriptions
// still open may be closed at any time. Close is idempotent.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	ps, done := h.ps, h.done
	first := !h.closed
	var nodes []*node
	if first {
		h.closed = true
		close(h.quit)
		h.stop()
		for _, t := range h.topics {
			t.wakeAll(unsent)
		}
		clear(h.topics)
		for _, n := range h.nodes {
			nodes = append(nodes, n)
		}
		clear(h.nodes)
	}
	h.mu.Unlock()

	var err error
	if first && ps != nil {
		// Outside the mutex: go-redis may hold its own lock while it redials.
		if cerr := ps.Close(); cerr != nil {
			err = fmt.Errorf("pubsub: close connection: %w", cerr)
		}
	}
	for _, n := range nodes {
		_ = n.ps.Close()
		_ = n.client.Close()
	}
	exited := make(chan struct{})
	go func() {
		h.workers.Wait()
		if done != nil {
			<-done
		}
		close(exited)
	}()
	select {
	case <-exited:
		return err
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("pubsub: close: waiting for the readers: %w", ctx.Err()))
	}
}
