package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// Commands is how many SUBSCRIBE and UNSUBSCRIBE commands (SSUBSCRIBE
	// and SUNSUBSCRIBE on Cluster) the Hub has sent, the probe's included:
	// traffic that go-redis hooks do not see.
	Commands int64
	// Nodes is how many sharded connections are open (one per primary that
	// owns a channel waited on; 0 outside Cluster).
	Nodes int
	// Moves is how many times a shard channel was resubscribed on another
	// connection: its slot moved, its primary failed over or its connection
	// was lost.
	Moves int64
}

// NewHub returns a Hub that subscribes through rdb. It does no I/O: the
// connection is opened by the first Subscribe.
func NewHub(rdb Subscriber, opts ...Option) (*Hub, error) {
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
	}
	h.cluster, _ = rdb.(cluster)
	h.bg, h.stop = context.WithCancel(context.Background())
	return h, nil
}

// Stats returns a snapshot of the Hub's state.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Reconnects: h.reconnects, Refused: h.refused != nil, Commands: h.commands,
		Nodes: len(h.nodes), Moves: h.moves}
	for _, t := range h.topics {
		if len(t.waiters) > 0 {
			st.Channels++
			st.Waiters += len(t.waiters)
		}
	}
	return st
}

// Waiters returns the number of waiters registered on channel. It never
// blocks: while the Hub is busy (writing SUBSCRIBE, say) it reports 0.
func (h *Hub) Waiters(channel string) int {
	if !h.mu.TryLock() {
		return 0
	}
	defer h.mu.Unlock()
	if t := h.topics[channel]; t != nil {
		return len(t.waiters)
	}
	return 0
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
			t.wakeAll()
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

// start makes sure the connection is open: the first caller opens it, the
// others wait for that (bounded by ctx).
func (h *Hub) start(ctx context.Context) error {
	for {
		h.mu.Lock()
		switch {
		case h.closed:
			h.mu.Unlock()
			return errs.ErrClosed
		case h.refused != nil:
			h.mu.Unlock()
			return h.refused
		case h.ps != nil || h.sharded:
			h.mu.Unlock()
			return nil
		case h.starting != nil:
			wait := h.starting
			h.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-h.quit:
				return errs.ErrClosed
			case <-ctx.Done():
				return fmt.Errorf("pubsub: subscribe: %w", ctx.Err())
			}
		case time.Now().Before(h.retryAt):
			err := h.retryErr
			h.mu.Unlock()
			return err
		}
		h.starting = make(chan struct{})
		h.mu.Unlock()
		if h.cluster != nil {
			err := h.probeShard(ctx)
			if err == nil {
				return h.shardOpened()
			}
			if !isUnknownCommand(err) {
				return h.opened(ctx, nil, err)
			}
			// Detected once: the Hub stays on SUBSCRIBE for its life, and
			// the scripts' SPUBLISH falls back to PUBLISH on such a server.
			h.opts.logger.Info("pubsub: the cluster has no sharded pub/sub (Redis before 7.0); using SUBSCRIBE", "err", err)
			h.mu.Lock()
			h.commands++
			h.mu.Unlock()
		}
		ps, err := h.open(ctx)
		return h.opened(ctx, ps, err)
	}
}

// opened records the outcome of open and starts the reader on success.
func (h *Hub) opened(ctx context.Context, ps *redis.PubSub, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.starting)
	h.starting = nil
	h.commands++ // the probe's SUBSCRIBE, sent whatever the outcome
	switch {
	case h.closed:
		if ps != nil {
			_ = ps.Close()
		}
		return errs.ErrClosed
	case err == nil:
		h.ps = ps
		h.done = make(chan struct{})
		go h.read(ps.ChannelWithSubscriptions(redis.WithChannelSize(1000)), h.done)
		return nil
	case ctxDone(ctx):
		return fmt.Errorf("pubsub: subscribe: %w", ctxErr(ctx))
	case isRefusal(err):
		h.refused = fmt.Errorf("%w: %w", errs.ErrSubscribeRefused, err)
		h.opts.logger.Warn("pubsub: server refused SUBSCRIBE; waits will poll", "err", err)
		return h.refused
	default:
		h.retryErr = fmt.Errorf("%w: no confirmation of SUBSCRIBE %q: %w",
			errs.ErrSubscribeRefused, h.opts.probe, err)
		h.retryAt = time.Now().Add(retryDelay)
		h.opts.logger.Warn("pubsub: could not open the subscription connection; waits will poll",
			"err", err, "retry_in", retryDelay)
		return h.retryErr
	}
}

// open subscribes to the probe channel and reads its confirmation
// synchronously, before any goroutine reads the connection, so that a refusal
// is seen as the error reply it is.
func (h *Hub) open(ctx context.Context) (*redis.PubSub, error) {
	ps := h.rdb.Subscribe(ctx, h.opts.probe)
	msg, err := ps.ReceiveTimeout(ctx, h.opts.confirmTimeout)
	if err == nil {
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == h.opts.probe {
			return ps, nil
		}
		err = fmt.Errorf("unexpected reply %v", msg)
	}
	_ = ps.Close()
	return nil, err
}

// ctxDone reports whether ctx has ended, or its deadline has passed: a read
// that timed out at the ctx deadline may return a moment before ctx.Err()
// is set.
func ctxDone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// ctxErr is ctx.Err(), or DeadlineExceeded when the deadline has passed but
// ctx has not noticed yet.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// isRefusal reports whether err is the server saying no (NOPERM, unknown
// command, a proxy's refusal) rather than a state that passes (loading,
// failover in progress).
func isRefusal(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	for _, transient := range []string{"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK"} {
		if strings.HasPrefix(rerr.Error(), transient) {
			return false
		}
	}
	return true
}
