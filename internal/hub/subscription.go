package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
)

// Subscription is one waiter registered with a Hub. Its methods are safe for
// concurrent use.
type Subscription struct {
	hub     *Hub
	topic   *topic
	id      string
	c       chan struct{}
	payload atomic.Pointer[string]
	woke    atomic.Int64 // the last wake's date (see Woke): Hub.clock's, or unsent
	shared  bool         // set at registration; see Shared
	closed  bool         // guarded by hub.mu
	weight  int64        // guarded by hub.mu; see SetWeight
	// pinned: Pin's, while it waits for the confirmation; not a waiter,
	// which Stats and Waiters do not count.
	pinned bool
	// told, toldOn: the Hub's handled count and connection at the last
	// message targeted at id (guarded by hub.mu; see Heard).
	told, toldOn int64
}

// Heard reports whether the pinned channel (see Hub.Pin) was subscribed,
// on the connection that brought the last message targeted at this
// Subscription's id, before that message: whatever the server publishes
// on channel after it then reaches this Hub after it, unless the
// connection breaks first (then, as for every notice lost, a renewal finds
// the hold gone). False once the Hub has seen a new connection since;
// outside Cluster only; false before any such message.
func (s *Subscription) Heard(channel string) bool {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[channel]
	return !h.sharded && t != nil && t.pinned && s.told > 0 && t.heard > 0 &&
		t.heardOn == s.toldOn && t.heardOn == h.reconnects && t.heard < s.told
}

// Shared reports whether the channel was already subscribed, and had other
// waiters here, when this one registered. Then a wake-one message published
// between the caller's last check and its registration reached one of those
// waiters, whose check passes the resource on: a caller that waits for
// untargeted messages need not check again before its first wait.
func (s *Subscription) Shared() bool { return s.shared }

// C returns the wake channel. It has a buffer of 1 and wakes coalesce: the
// Hub never blocks on it, and several wakes before a receive are one.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Payload returns the payload of the last message targeted at this
// Subscription's id (see To), or "" if none has arrived.
func (s *Subscription) Payload() string {
	if p := s.payload.Load(); p != nil {
		return *p
	}
	return ""
}

// Woke returns when the Hub gave C its last wake (the one received from
// it, unless another came since), by this process's monotonic clock: when
// it read the message that asked for
// it (or was given it by Deliver), when a caller that would have sent it
// to itself asked for it (WakeOne, WakeN, WakeFree), or when another
// waiter passed it on (PassOn, Close). It returns the zero Time for a wake
// that no message asked for: the Hub's, after a reconnect or a shard
// channel's move (messages may have been lost), or its Close; and before
// any wake. A wake that coalesced with a pending one changes nothing.
func (s *Subscription) Woke() time.Time {
	at := s.woke.Load()
	if at == unsent {
		return time.Time{}
	}
	return s.hub.born.Add(time.Duration(at - 1))
}

// Close unregisters the waiter; it is idempotent. A wake delivered to it but
// not received is passed on to another waiter of the channel, so a wake-one
// message is not swallowed by a waiter that leaves. (A wake already received
// cannot be passed on: a waiter that receives one and then gives up must
// let the releaser's protocol hand the resource on.) When the last waiter of
// a channel leaves, the Hub unsubscribes from it.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s)
}

// SetWeight says how many units (permits) this waiter needs, at least 1:
// an "n:K" message wakes waiters, longest-waiting first, only while their
// weights fit in K, so a release of 1 permit does not wake a waiter of 3,
// and a release of 5 wakes five waiters of 1. The default is 1. Wake-one
// ("1") and wake-all ("*") ignore weights.
func (s *Subscription) SetWeight(w int64) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.weight = max(1, w)
}

// PassOn wakes one other waiter of the channel that has no pending wake:
// the longest-waiting one that fits in this one's weight (see SetWeight),
// or, when none does, the longest-waiting one all the same, whose try
// tells the primitive what it waits for (see wakeN). It is for a waiter
// that received a wake but gives up before acting on it.
func (s *Subscription) PassOn() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed || h.closed {
		return
	}
	at := h.clock()
	if !s.passOn(true, at) {
		s.passOn(false, at)
	}
}

// passOn wakes the longest-waiting waiter of s's channel but s that has no
// pending wake and, if weighed, fits in s's weight, moves it to the back,
// and reports whether there was one; its wake is dated at. The caller
// holds the Hub's mu.
func (s *Subscription) passOn(weighed bool, at int64) bool {
	t := s.topic
	for i, w := range t.waiters {
		if w != s && (!weighed || w.weight <= s.weight) && w.wake(at) {
			t.waiters = append(slices.Delete(t.waiters, i, i+1), w) // to the back
			return true
		}
	}
	return false
}

// wake gives s a wake dated at, unless a wake is pending: that one keeps
// its date (see Woke). The caller holds the Hub's mu, as every sender on c
// does, so c cannot fill between the check and the send.
func (s *Subscription) wake(at int64) bool {
	if len(s.c) > 0 {
		return false
	}
	s.woke.Store(at)
	select {
	case s.c <- struct{}{}:
		return true
	default:
		return false
	}
}

// Subscribe registers a waiter on channel and returns once the server has
// confirmed the subscription, so a message published after Subscribe returns
// reaches it. id is optional ("" for none): a message built with To(id, …)
// wakes only the waiters registered with that id. id must not contain a space.
//
// Subscribe returns ErrClosed after Close; an error wrapping
// ErrSubscribeRefused when the server refuses SUBSCRIBE (an ACL, a proxy) or
// does not confirm it within the confirm timeout, in which case the caller
// should poll; or an error wrapping ctx.Err(). On error nothing is left
// registered.
//
// The first Subscribe opens the Hub's connection; that step honours ctx's
// deadline but not its cancellation, and is bounded by the confirm timeout.
func (h *Hub) Subscribe(ctx context.Context, channel, id string) (*Subscription, error) {
	return h.SubscribeWeighted(ctx, channel, id, 1)
}

// SubscribeWeighted is Subscribe for a waiter that needs weight permits
// (see SetWeight), weighed from the moment it is registered.
func (h *Hub) SubscribeWeighted(ctx context.Context, channel, id string, weight int64) (*Subscription, error) {
	return h.subscribe(ctx, channel, id, weight, false)
}

// subscribe is SubscribeWeighted; pinned registers Pin's subscription.
func (h *Hub) subscribe(ctx context.Context, channel, id string, weight int64, pinned bool) (*Subscription, error) {
	switch {
	case channel == "":
		return nil, errs.Invalid("channel", "must not be empty")
	case channel == h.opts.probe:
		return nil, errs.Invalid("channel", "%q is the Hub's probe channel", channel)
	case strings.Contains(id, " "):
		return nil, errs.Invalid("id", "must not contain a space, got %q", id)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pubsub: subscribe %q: %w", channel, err)
	}
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	s, ready, err := h.register(ctx, channel, id, max(1, weight), pinned)
	if err != nil || ready == nil {
		return s, err
	}

	timer := time.NewTimer(h.opts.confirmTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		if err = h.topicErr(s); err == nil {
			return s, nil
		}
	case <-h.quit:
		err = errs.ErrClosed
	case <-timer.C:
		err = errs.New(errs.ErrSubscribeRefused, "no confirmation of SUBSCRIBE %q within %v",
			channel, h.opts.confirmTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("pubsub: subscribe %q: %w", channel, ctx.Err())
	}
	s.Close()
	return nil, err
}

// Pin subscribes to channel for the Hub's life, without a waiter: its
// notices reach the notice handler (WithNotice), and Stats does not count
// it. It returns once the server has confirmed the subscription, with
// Subscribe's errors; waiters may still subscribe to the channel, and their
// leaving does not unsubscribe it.
func (h *Hub) Pin(ctx context.Context, channel string) error {
	s, err := h.subscribe(ctx, channel, "", 1, true)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.topic.pinned = true
	h.removeLocked(s)
	return nil
}

// Listen registers a waiter on channel only if the channel is subscribed and
// confirmed already (it has waiters, or lingers; see WithLinger), and
// returns nil otherwise. It sends no command and never waits, so a caller
// can register before the check that its wait depends on: a message
// published after Listen returns a Subscription reaches it. id and weight
// are as for SubscribeWeighted; a bad id returns nil.
func (h *Hub) Listen(channel, id string, weight int64) *Subscription {
	if channel == "" || channel == h.opts.probe || strings.Contains(id, " ") {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[channel]
	if h.closed || t == nil || !t.confirmed || t.err != nil || (h.sharded && t.node == nil) {
		return nil
	}
	t.lingering = false
	s := &Subscription{hub: h, topic: t, id: id, c: make(chan struct{}, 1), weight: max(1, weight)}
	t.waiters = append(t.waiters, s)
	s.shared = len(t.waiters) > 1
	return s
}

// register adds a waiter to channel, sending SUBSCRIBE if it is the first.
// It returns the channel to wait on for the confirmation, or nil if the
// subscription is already confirmed.
func (h *Hub) register(ctx context.Context, channel, id string, weight int64,
	pinned bool) (*Subscription, <-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, errs.ErrClosed
	}
	t := h.topics[channel]
	if t == nil {
		t = &topic{name: channel}
		h.topics[channel] = t
	}
	if t.err != nil {
		return nil, nil, t.err
	}
	lingered := t.lingering // still subscribed: no SUBSCRIBE
	t.lingering = false
	s := &Subscription{hub: h, topic: t, id: id, c: make(chan struct{}, 1), weight: weight, pinned: pinned}
	t.waiters = append(t.waiters, s)
	if len(t.waiters) == 1 && h.sharded {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.confirmTimeout)
		err := h.subscribeShardLocked(wctx, t)
		cancel()
		if err != nil {
			h.removeLocked(s)
			op := fmt.Sprintf("SSUBSCRIBE %q", channel)
			return nil, nil, &errs.Error{Sentinel: errs.ErrSubscribeRefused, Op: op, Cause: err}
		}
	} else if len(t.waiters) == 1 && !lingered {
		// Written under h.mu, so that SUBSCRIBE and UNSUBSCRIBE of one
		// channel reach the server in the order they were decided here.
		t.pending++
		t.confirmed = false
		t.ready = make(chan struct{})
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.confirmTimeout)
		err := h.ps.Subscribe(wctx, channel)
		cancel()
		h.commands++
		if err != nil {
			// Most likely never reached the server; counting low is safe.
			t.pending--
			h.removeLocked(s)
			op := fmt.Sprintf("SUBSCRIBE %q", channel)
			return nil, nil, &errs.Error{Sentinel: errs.ErrSubscribeRefused, Op: op, Cause: err}
		}
	}
	if t.confirmed {
		s.shared = len(t.waiters) > 1
		return s, nil, nil
	}
	return s, t.ready, nil
}

// removeLocked unregisters s, passing on an unreceived wake, and
// unsubscribes when s was the channel's last waiter.
func (h *Hub) removeLocked(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	if h.closed {
		return // Close has dropped every topic and closed the connection
	}
	t := s.topic
	if i := slices.Index(t.waiters, s); i >= 0 {
		t.waiters = slices.Delete(t.waiters, i, i+1)
	}
	select {
	case <-s.c:
		// Dated now, not when s's wake came: the waiter it reaches may
		// have registered since.
		at := h.clock()
		if s.woke.Load() == unsent {
			at = unsent
		}
		t.wakeN(s.weight, at)
	default:
	}
	if len(t.waiters) > 0 || t.pinned {
		return
	}
	if h.sharded {
		// Replies to this topic's commands carry its generation, which no
		// later topic of the same name shares: it can go at once.
		h.unsubscribeShardLocked(t)
		delete(h.topics, t.name)
		return
	}
	if h.opts.linger > 0 && t.confirmed {
		t.lingering = true
		t.lingerEnd = time.Now().Add(h.opts.linger)
		if t.linger == nil {
			t.linger = time.AfterFunc(h.opts.linger, func() { h.endLinger(t) })
		} else {
			t.linger.Reset(h.opts.linger)
		}
		return
	}
	h.unsubscribeLocked(t)
}

// endLinger unsubscribes t, whose last waiter left a linger ago, unless a
// waiter took it over since. A timer that fired for an earlier linger
// while a later one began waits for the later one's end.
func (h *Hub) endLinger(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !t.lingering || h.topics[t.name] != t {
		return
	}
	if left := time.Until(t.lingerEnd); left > 0 {
		t.linger.Reset(left)
		return
	}
	t.lingering = false
	h.unsubscribeLocked(t)
}

// unsubscribeLocked sends UNSUBSCRIBE for t, which has no waiter; the
// caller holds mu.
func (h *Hub) unsubscribeLocked(t *topic) {
	t.confirmed = false
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.confirmTimeout)
	defer cancel()
	h.commands++
	if err := h.ps.Unsubscribe(ctx, t.name); err != nil {
		// go-redis has forgotten the channel anyway, so a reconnect will not
		// resubscribe it; at worst the server sends a few unwanted messages.
		h.opts.logger.Warn("pubsub: UNSUBSCRIBE failed", "channel", t.name, "err", err)
	}
	if t.pending == 0 {
		delete(h.topics, t.name)
	}
}

// topicErr returns why s's topic cannot be subscribed, if it cannot.
func (h *Hub) topicErr(s *Subscription) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.topic.err
}
