package redistest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Net is a simulated network between clients and their servers: every
// connection dialed through [Net.Dialer] passes its bytes through it, and it
// decides, per request and per pushed pub/sub message, what the network does
// with it. Install it under a go-redis client with
// redis.Options.Dialer = n.Dialer(tag, base). The zero value is not usable;
// use [NewNet]. All methods are safe for concurrent use.
//
// A request is what one Write of a client carries: one command, or a
// pipeline's commands together (a TCP segment). The network may fault a
// request that holds a script call (EVALSHA, EVAL, FCALL and their _RO
// forms) on a connection that is not a subscriber; every other request
// passes as written. A faulted request is
//
//   - held ([NetHold]): not sent on its connection; after D, a copy is
//     delivered to the server on a ghost connection of its own (dialed
//     through the base dialer, its handshake replayed first, closed after
//     the reply). If the client still waits, the ghost's reply is its late
//     reply; if its read deadline passes first, its read fails with a
//     timeout (go-redis closes the connection and retries on a new one),
//     and the copy still reaches the server at D, as a packet in flight
//     does.
//   - duplicated ([NetDup]): sent, and a copy delivered again D later on a
//     ghost connection, its reply discarded (a retry whose first try had
//     been applied).
//   - dropped before the server ([NetDropBefore]) or after it, the reply
//     lost ([NetDropAfter]): the client's read fails with a reset (io.EOF,
//     the connection broken) D after the server has had its chance to
//     apply it, or with a timeout at its read deadline when Timeout is set.
//
// A whole message pushed on a subscriber connection (a RESP3 push or RESP2
// array whose kind is message, smessage or pmessage) may be dropped
// ([NetMsgDrop]), duplicated ([NetMsgDup]) or delayed by D ([NetMsgDelay]);
// what follows it on its connection is delayed with it, so each connection
// keeps its order.
//
// What happens to each request and message comes from [Net.Arm]ed faults,
// oldest first, then from the function [Net.SetDraw] installed, which is
// told the tag of the connection and what the request calls: a draw that
// keeps a source per tag and call makes each decision a function of the
// order within that stream, not of the order in which goroutines woken at
// one instant write to several servers, call several scripts, or read one
// message on several subscriber connections.
type Net struct {
	mu       sync.Mutex
	draw     func(tag int, msg bool, call string) NetFault // nil: nothing is faulted unless armed
	armed    [2][]NetFault                                 // armed faults for requests, for messages
	aimed    []aimed                                       // armed faults for the requests they match
	hook     func(tag int, what string)
	latency  func(tag int) time.Duration // nil: none
	sent     int64                       // requests written by clients so far
	faults   int                         // faults that took effect
	late     int                         // requests delivered after a request sent later
	due      time.Time                   // when the last delivery or message in flight is due
	stop     chan struct{}
	stopping bool

	wg sync.WaitGroup // ghost deliveries in flight
}

// NetKind names what the network does with one request or message.
type NetKind uint8

const (
	NetPass       NetKind = iota // delivered as sent
	NetHold                      // a request is delivered D later, on a ghost connection
	NetDup                       // a request is delivered, and a copy D later
	NetDropBefore                // a request is lost before the server
	NetDropAfter                 // a request is applied, its reply lost
	NetMsgDrop                   // a message is lost
	NetMsgDup                    // a message is delivered twice
	NetMsgDelay                  // a message, and what follows it, arrives D late
)

var netKindNames = [...]string{
	"pass", "hold", "dup", "drop before", "drop after", "drop message", "dup message", "delay message",
}

func (k NetKind) String() string { return netKindNames[k] }

// NetFault is one decision of the network.
type NetFault struct {
	Kind    NetKind
	D       time.Duration // NetHold, NetDup, NetMsgDelay: how late; NetDropBefore, NetDropAfter: how late the reset comes
	Timeout bool          // NetDropBefore, NetDropAfter: the client sees a timeout at its read deadline, not a reset
}

// NewNet returns a network that faults nothing until faults are armed or a
// draw function is set.
func NewNet() *Net { return &Net{stop: make(chan struct{})} }

// SetDraw installs draw (nil: none), asked for every request the network may
// fault (msg false) and every pushed message (msg true) for which no fault is
// armed, with the tag of its connection and, for a request, what it calls:
// each command's name, script SHA1 or source, and first key, sorted (a
// pipeline's order may follow a map's). It is called with n's lock held, in
// the order requests are written and messages read; it must be quick and
// must not call methods of n.
func (n *Net) SetDraw(draw func(tag int, msg bool, call string) NetFault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.draw = draw
}

// Arm queues f for the next request (a request kind) or the next pushed
// message (a message kind) on any connection of n.
func (n *Net) Arm(f NetFault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := 0
	if f.Kind >= NetMsgDrop {
		i = 1
	}
	n.armed[i] = append(n.armed[i], f)
}

// aimed is a fault armed by [Net.ArmFor].
type aimed struct {
	match func(tag int, call string) bool
	f     NetFault
}

// ArmFor queues f, a request kind, for the next request for which match
// returns true, told the tag of its connection and what it calls (as the
// function [Net.SetDraw] installs is). Faults armed so are tried oldest
// first, before those of [Net.Arm], and each is consumed by the one request
// it matches. match is called with n's lock held: it must be quick and must
// not call methods of n. [Net.Calm] drops those not yet matched, and so
// does [Net.Disarm].
func (n *Net) ArmFor(match func(tag int, call string) bool, f NetFault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.aimed = append(n.aimed, aimed{match: match, f: f})
}

// Aimed returns how many faults armed by [Net.ArmFor] are not matched yet.
func (n *Net) Aimed() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.aimed)
}

// Disarm drops the faults armed by [Net.Arm] and [Net.ArmFor] that have
// not taken effect yet; the draw function stays.
func (n *Net) Disarm() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.armed, n.aimed = [2][]NetFault{}, nil
}

// OnFault installs hook (nil: none), called with a connection's tag and a
// few words each time a fault takes effect or a held request is delivered.
// It is called without n's lock held, but possibly inside a Read or Write.
func (n *Net) OnFault(hook func(tag int, what string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook = hook
}

// SetLatency installs latency (nil: none): the reply to a script call that
// the network passes comes latency(tag) after the server wrote it, on a
// connection of that tag. Distinct latencies keep apart the replies of
// several servers to requests sent at one instant (a RedLock's), which
// would otherwise reach their callers at one instant of a synctest
// bubble's clock, in the scheduler's order. It applies to connections
// dialed from then on.
func (n *Net) SetLatency(latency func(tag int) time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.latency = latency
}

// Calm stops faulting (armed faults and the draw function are dropped) and
// returns the instant by which everything in flight has been delivered.
func (n *Net) Calm() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.draw = nil
	n.armed, n.aimed = [2][]NetFault{}, nil
	return n.due
}

// Faults returns how many faults have taken effect.
func (n *Net) Faults() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faults
}

// Late returns how many requests reached the server after a request that
// some client wrote later: held or duplicated requests delivered once
// another request had been written since they were.
func (n *Net) Late() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.late
}

// Close drops the deliveries still waiting for their time and waits for
// those under way (each bounded by ghostTimeout). Close the clients first.
func (n *Net) Close() {
	n.mu.Lock()
	if !n.stopping {
		n.stopping = true
		close(n.stop)
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// Dialer wraps base, which must not be nil, for redis.Options.Dialer: every
// connection it makes goes through n, and tag names them to the hook.
func (n *Net) Dialer(
	tag int, base func(ctx context.Context, network, addr string) (net.Conn, error),
) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dial := func() (net.Conn, error) { return base(context.Background(), network, addr) }
		var lat time.Duration
		n.mu.Lock()
		if n.latency != nil {
			lat = n.latency(tag)
		}
		n.mu.Unlock()
		return &simConn{Conn: c, n: n, tag: tag, dial: dial, lat: lat, closed: make(chan struct{})}, nil
	}
}

// wrote counts k requests written by a client.
func (n *Net) wrote(k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent += int64(k)
}

// decide returns what happens to a request (msg false) or a message, and
// counts a request as written.
func (n *Net) decide(tag int, msg bool, call, what string) NetFault {
	n.mu.Lock()
	i := 0
	if msg {
		i = 1
	} else {
		n.sent++
	}
	var f NetFault
	aim := -1
	if !msg {
		aim = slices.IndexFunc(n.aimed, func(a aimed) bool { return a.match(tag, call) })
	}
	switch {
	case aim >= 0:
		f = n.aimed[aim].f
		n.aimed = slices.Delete(n.aimed, aim, aim+1)
	case len(n.armed[i]) > 0:
		f, n.armed[i] = n.armed[i][0], n.armed[i][1:]
	case n.draw != nil:
		f = n.draw(tag, msg, call)
	}
	if f.Kind != NetPass {
		n.faults++
		if f.Kind == NetHold || f.Kind == NetDup || f.Kind == NetMsgDelay {
			n.dueBy(time.Now().Add(f.D))
		}
	}
	hook := n.hook
	n.mu.Unlock()
	if hook != nil && f.Kind != NetPass {
		hook(tag, faultText(f, what))
	}
	return f
}

// dueBy records that something in flight is due at t.
func (n *Net) dueBy(t time.Time) {
	if t.After(n.due) {
		n.due = t
	}
}

func faultText(f NetFault, what string) string {
	s := "net: " + f.Kind.String()
	if what != "" {
		s += " " + what
	}
	switch f.Kind {
	case NetHold, NetDup, NetMsgDelay:
		s += fmt.Sprintf(" (%v)", f.D)
	case NetDropBefore, NetDropAfter:
		if f.Timeout {
			s += " (timeout)"
		}
	}
	return s
}

// describe names a request by its commands and first keys, as hooks see it,
// and returns what it calls for the draw function (see [Net.SetDraw]); both
// sorted.
func describe(cmds [][]string) (what, call string) {
	var parts, calls []string
	for _, args := range cmds {
		s := args[0]
		if len(args) > 3 && (strings.HasPrefix(s, "EVAL") || strings.HasPrefix(s, "FCALL")) {
			s += " " + args[3]
		}
		parts = append(parts, s)
		c := args[0]
		if len(args) > 3 {
			c += " " + args[1] + " " + args[3]
		}
		calls = append(calls, c)
	}
	slices.Sort(parts)
	slices.Sort(calls)
	return strings.Join(parts, "+"), strings.Join(calls, "+")
}
