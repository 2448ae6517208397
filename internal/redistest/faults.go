package redistest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Faults wraps the connections a go-redis client dials and injects faults
// into them. Install it with redis.Options.Dialer = f.Dialer(nil). The zero
// value is not usable; use [NewFaults]. All methods are safe for concurrent
// use.
//
// Faults reads the commands a client writes (RESP arrays of bulk strings) to
// recognise the command a fault is armed for and to know which connections are
// subscribers. Replies are not parsed: see [Faults.DropReply] for what that
// means for pipelines.
type Faults struct {
	blackhole atomic.Bool  // subscriber connections swallow all traffic
	stall     atomic.Bool  // every connection swallows all traffic
	fired     atomic.Int64 // DropReply faults that have fired
	late      atomic.Int64 // DelaySubscribers: how late subscribers' bytes arrive, ns
	delayed   atomic.Int64 // DelayReply faults that have held a reply

	swallowTimeout atomic.Bool // a read that swallowed bytes ends with a timeout

	mu     sync.Mutex                 // protects drops, delays and conns
	drops  []func(args []string) bool // armed DropReply matchers, oldest first
	delays []delay                    // armed DelayReply faults, oldest first
	conns  map[*faultConn]struct{}    // connections dialed and not yet closed by their owner
}

// NewFaults returns a Faults with no fault armed and no connection tracked.
func NewFaults() *Faults {
	return &Faults{conns: make(map[*faultConn]struct{})}
}

// Dialer wraps base (nil: a net.Dialer dialing TCP) and returns a function for
// redis.Options.Dialer. Every connection it makes is tracked until its owner
// closes it. A failed dial returns base's error and tracks nothing.
func (f *Faults) Dialer(
	base func(ctx context.Context, network, addr string) (net.Conn, error),
) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if base == nil {
		base = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := &faultConn{Conn: c, f: f}
		f.mu.Lock()
		f.conns[fc] = struct{}{}
		f.mu.Unlock()
		return fc, nil
	}
}

// DropReply arms one fault. The next command, on any tracked connection, for
// which match returns true is passed to the server unchanged; when the first
// bytes of a reply then arrive on that connection they are discarded, the
// connection is closed, and the client's Read returns an error wrapping
// io.EOF. go-redis therefore sees a lost reply after the server did execute
// the command, and retries it on a new connection.
//
// match receives the command's arguments as written, except that args[0], the
// command name, is upper-cased: ["EVALSHA", sha, "2", "k1", ...]. Each call
// arms one more fault; armed faults are tried oldest first and each is
// consumed by the one command it matches. Fired counts a fault once its reply
// has been dropped; a fault whose command was written on a connection that
// closed before any reply arrived is consumed without firing.
//
// Limitation: replies are not parsed, so "the first bytes of a reply" are the
// reply to the matched command only when no earlier command on the connection
// is still waiting for its reply — always true for commands sent one at a
// time, which is what tests should use. In a pipeline the earlier replies are
// dropped with it, and every fault matched by that connection fires at once.
//
// match is called with f's lock held: it must be quick and must not call
// methods of f.
func (f *Faults) DropReply(match func(args []string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drops = append(f.drops, match)
}

// Fired returns how many DropReply faults have fired so far.
func (f *Faults) Fired() int { return int(f.fired.Load()) }

// Blackhole makes every tracked connection that has written a SUBSCRIBE,
// SSUBSCRIBE or PSUBSCRIBE command, now or later, silently discard all bytes
// in both directions: writes report success and send nothing, reads keep
// reading the real connection and discard what arrives, so they block until
// the read deadline (returning the connection's own timeout error) or until
// the connection is closed. The write that makes a connection a subscriber is
// itself discarded if Blackhole is in effect. The server still sees the
// subscription, so PUBLISH keeps counting the subscriber.
func (f *Faults) Blackhole() { f.blackhole.Store(true) }

// TimeoutSwallowed makes a read on a connection that Blackhole or Stall
// swallows return a timeout error at once, as a read whose data did not
// come in time, instead of waiting for its deadline. Use it in a synctest
// bubble for faults that last: go-redis's PubSub reconnects (dialing, and
// reading HELLO's reply) with its mutex held, and its health check then
// waits for that mutex; a goroutine waiting for a sync.Mutex is not durably
// blocked, so the bubble's clock stops and the deadline never comes.
// go-redis answers the timeout as on a network: a retry, a ping, a
// reconnect, on and on while the fault lasts.
func (f *Faults) TimeoutSwallowed() { f.swallowTimeout.Store(true) }

// Unblackhole restores normal delivery for bytes written or arriving from now
// on. Bytes discarded meanwhile are gone; the client's view of the connection
// may be out of step with the server's, so tests usually follow Unblackhole
// with CloseAll.
func (f *Faults) Unblackhole() { f.blackhole.Store(false) }

// Stall makes every tracked connection, subscriber or not, discard all bytes
// in both directions, as Blackhole does for subscribers: a command written
// then reports success and its reply never comes, so the client waits for
// as long as its read deadline lets it, for ever with ReadTimeout -1. New
// connections stall too. It is a network that silently drops packets.
func (f *Faults) Stall() { f.stall.Store(true) }

// Unstall restores delivery for bytes written or arriving from now on, as
// Unblackhole does.
func (f *Faults) Unstall() { f.stall.Store(false) }

// DelaySubscribers makes every tracked subscriber connection (as for
// Blackhole) hand the bytes that arrive from now on to the client d late
// (0: at once, as before): each read that returns bytes waits d first. A
// pub/sub message is then delivered late, in order, and the server's other
// clients go on meanwhile: in a testing/synctest bubble, a message in
// flight while they act.
func (f *Faults) DelaySubscribers(d time.Duration) { f.late.Store(int64(d)) }

// CloseAll breaks every tracked connection, as a network blip would: the real
// connection is closed, and from then on the wrapper behaves like a
// connection whose peer went away — writes report success and send nothing,
// reads return io.EOF, deadline setters succeed. go-redis takes that for a
// retryable error and dials again. (A plain Close would instead make go-redis
// fail the next command with "use of closed network connection", which it
// does not retry.)
func (f *Faults) CloseAll() {
	f.mu.Lock()
	conns := make([]*faultConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.breakConn()
	}
}

// take consumes and returns the oldest armed matcher that accepts args, or
// nil.
func (f *Faults) take(args []string) func([]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, match := range f.drops {
		if match(args) {
			f.drops = append(f.drops[:i:i], f.drops[i+1:]...)
			return match
		}
	}
	return nil
}

// rearm puts matchers whose command never reached the server back at the
// front of the armed list, in their original order.
func (f *Faults) rearm(matchers []func([]string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drops = append(matchers, f.drops...)
}

// delay is one armed DelayReply fault.
type delay struct {
	match func(args []string) bool
	d     time.Duration
}

// DelayReply arms one fault: the next command, on any tracked connection,
// for which match returns true is passed to the server unchanged, and when
// the first bytes of its reply arrive they are held back for d (on the
// bubble's fake clock inside a testing/synctest bubble). If the
// connection's read deadline comes first, the read waits until the deadline
// and returns a timeout error, the reply is lost and the connection broken,
// as a reply that never came in time: go-redis retries the command (which
// the server did execute) on a new connection. Closing the connection ends
// the wait at once. match is as for [Faults.DropReply]; the same limitation
// about pipelines applies. Each call arms one more fault, consumed by the one
// command it matches; [Faults.Delayed] counts those whose reply was held.
func (f *Faults) DelayReply(match func(args []string) bool, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays = append(f.delays, delay{match: match, d: d})
}

// Delayed returns how many DelayReply faults have held a reply back so far.
func (f *Faults) Delayed() int { return int(f.delayed.Load()) }

// Disarm drops every armed DropReply and DelayReply fault that has not been
// matched yet.
func (f *Faults) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drops, f.delays = nil, nil
}

// takeDelay consumes and returns the delay of the oldest armed DelayReply
// fault that accepts args, or 0.
func (f *Faults) takeDelay(args []string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, dl := range f.delays {
		if dl.match(args) {
			f.delays = append(f.delays[:i:i], f.delays[i+1:]...)
			return dl.d
		}
	}
	return 0
}

// forget stops tracking c.
func (f *Faults) forget(c *faultConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
}
