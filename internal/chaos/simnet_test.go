package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The simulated network of the bubble tier (redistest.Net): every byte
// between a process's Clients and the servers, on every connection (the
// caller's, the watchdog's, the Hub's), passes through it. From the first
// step of a schedule until the quiet phase, each request that calls a
// script may be held and delivered after later requests of other
// connections, delivered twice, or dropped before or after the server, and
// each pub/sub message may be dropped, duplicated or delayed. Its decisions
// are drawn from the schedule's seed, apart from the driver's (netDraw).

// Rates of the network's faults, in percent: most requests and messages
// pass, so that between faults there are stretches in which calls run as
// on a sound network.
const (
	netRequestRate = 4
	netMessageRate = 5
)

// netServers is the most servers a world has: a connection's tag is its
// process times netServers plus its server.
const netServers = 8

// netDraw returns the network's draw function for a schedule. Each
// decision comes from a source of its own, seeded by a hash of the
// schedule's seed, its stream, the instant of the bubble's clock and its
// number among the stream's draws at that instant. The stream is a
// connection tag (process and server) with, for requests, the script and
// key called. A decision then depends neither on the order in which
// goroutines woken at one instant reach several servers, call several
// scripts, or read one message on several subscriber connections, nor on
// the requests a stream made at other instants: a try that one run sends
// and another does not (a wait whose deadline meets its poll timer, a
// listen that finds the channel still confirmed or not) changes its own
// fate, not every later one of its stream.
//
// A call to several servers (a RedLock's) is one request per server: the
// request rate is divided by the servers, so that a call meets faults
// about as often in every world.
func netDraw(seed uint64, servers int) func(tag int, msg bool, call string) redistest.NetFault {
	type instant struct {
		at time.Time
		n  uint64 // draws of the stream at
	}
	last := make(map[string]*instant)
	return func(tag int, msg bool, call string) redistest.NetFault {
		stream := fmt.Sprintf("%d %t %s", tag, msg, call)
		now := time.Now()
		in := last[stream]
		if in == nil || !in.at.Equal(now) {
			in = &instant{at: now}
			last[stream] = in
		}
		in.n++
		key := binary.LittleEndian.AppendUint64(nil, seed)
		key = binary.LittleEndian.AppendUint64(key, uint64(now.UnixNano()))
		key = binary.LittleEndian.AppendUint64(key, in.n)
		r := rand.New(rand.NewChaCha8(sha256.Sum256(append(key, stream...))))
		// A few nanoseconds keep a late delivery off the instants of the
		// suite's own events (see apart), whose order it would race.
		late := func(d time.Duration) time.Duration { return d + time.Duration(3+r.IntN(997))*time.Nanosecond }
		if msg {
			if r.IntN(100) >= netMessageRate {
				return redistest.NetFault{}
			}
			switch r.IntN(3) {
			case 0:
				return redistest.NetFault{Kind: redistest.NetMsgDrop}
			case 1:
				return redistest.NetFault{Kind: redistest.NetMsgDup}
			}
			return redistest.NetFault{Kind: redistest.NetMsgDelay, D: late(pick(r, maxPoll/2, leaseTTL/2, leaseTTL))}
		}
		if r.IntN(100*servers) >= netRequestRate {
			return redistest.NetFault{}
		}
		x := r.IntN(10)
		switch {
		case x < 4: // past the next step, past the lease, past the read timeout
			return redistest.NetFault{Kind: redistest.NetHold, D: late(pick(r, maxPoll/2, leaseTTL/3, leaseTTL*3/2, readTimeout+leaseTTL/2))}
		case x < 6:
			return redistest.NetFault{Kind: redistest.NetDup, D: late(pick(r, maxPoll/4, leaseTTL/2, 2*leaseTTL))}
		}
		// A reset comes a little later than the request's other answers
		// would: a RedLock's answers at one instant are collected in the
		// scheduler's order.
		f := redistest.NetFault{Kind: redistest.NetDropBefore, Timeout: r.IntN(2) == 0, D: late(time.Duration(r.IntN(1000)) * time.Microsecond)}
		if x >= 8 {
			f.Kind = redistest.NetDropAfter
		}
		return f
	}
}

// netOn starts the network's faults, once, at the schedule's first step:
// setup ran on a sound network.
func (rn *run) netOn() {
	if rn.sound || rn.w.net == nil || rn.wd.netOn {
		return
	}
	rn.wd.netOn = true
	// Every script is on every server first: a request that finds its
	// script missing (NOSCRIPT) loads it with SCRIPT LOAD and is sent
	// again, and which of two concurrent first calls loads it is the
	// scheduler's choice.
	rn.w.loadScripts()
	rn.w.net.OnFault(func(tag int, what string) {
		rn.rec.fault(tag/netServers, fmt.Sprintf("s%d %s", tag%netServers, what))
	})
	rn.wd.draw = netDraw(rn.seed, len(rn.w.opts))
	rn.w.net.SetDraw(rn.wd.draw)
}

// netHushed runs step, which reports whether it ran, on a sound network
// when it is the wake probe (wake_test.go): its check bounds a wake-up by
// wakeBound, which a lost or late message, or a held try, would exceed.
// The network is emptied first and faults again after.
func (rn *run) netHushed(step func() bool) bool {
	if _, ok := rn.prim.(rlockPrim); !ok || rn.w.net == nil || !rn.wd.netOn {
		return step()
	}
	rn.netCalm()
	defer rn.w.net.SetDraw(rn.wd.draw)
	return step()
}

// netLatency is how late the network passes a reply on a connection of tag:
// a few nanoseconds, distinct per server, so that a RedLock's answers reach
// it in an order of the seed's, not the scheduler's. Server 0's replies
// come at once: in a world of one server, a release's reply and the grant
// of the waiter it woke share their instant, as the wake check expects.
func netLatency(tag int) time.Duration {
	return time.Duration(10*(tag%netServers)) * time.Nanosecond
}

// netCalm stops the network's faults and waits until whatever it holds in
// flight has been delivered: the quiet phase runs on a sound network.
func (rn *run) netCalm() {
	if rn.w.net == nil {
		return
	}
	if d := time.Until(rn.w.net.Calm()); d > 0 {
		rn.sleep(d)
	}
	rn.settle()
}

// netCounts returns the faults the network made and its late deliveries.
func (rn *run) netCounts() (faults, late int) {
	if rn.w.net == nil {
		return 0, 0
	}
	return rn.w.net.Faults(), rn.w.net.Late()
}
