package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Timing of every schedule. Lease and poll interval are short so that a
// schedule covers many leases in little simulated time; ReadTimeout is the
// go-redis default scaled to the lease.
const (
	leaseTTL    = time.Second
	maxPoll     = 200 * time.Millisecond
	readTimeout = 2 * time.Second
)

// world is the servers and processes of one schedule.
type world struct {
	servers []*miniredis.Miniredis // bubble tier; nil on the real server
	opts    []*redis.Options       // one per server
	admin   []*redis.Client        // fault-free, for setup and idle checks
	procs   []*proc
	names   []string       // the names handles lock
	net     *redistest.Net // bubble tier: the network every process's connections go through
}

// proc is one process: its own connections to every server, one fault set
// for all of them, and one Client per server.
type proc struct {
	faults  *redistest.Faults
	rdbs    []*redis.Client
	clients []*redcoord.Client
	closed  bool // Client.Close was called (driver's state)

	mu     sync.Mutex  // guards hubsUp
	hubsUp []time.Time // when a Client's Hub confirmed a new pub/sub connection (HubReconnected)
}

// newProc makes process pi; it dials nothing yet: go-redis and the Client
// connect on first use.
func newProc(pi int, opts []*redis.Options, bubble bool) (*proc, error) {
	p := &proc{faults: redistest.NewFaults()}
	p.faults.TimeoutSwallowed()
	for _, o := range opts {
		oo := *o
		oo.Dialer = p.faults.Dialer(o.Dialer)
		if bubble {
			oo.Dialer = orderedDialer(oo.Dialer)
		}
		oo.ReadTimeout = readTimeout
		// go-redis draws a random back-off before a retry: none keeps the
		// bubble's clock a function of the seed. It also keeps go-redis's
		// PubSub from sleeping with its mutex held (a re-dial's retried
		// HELLO): a goroutine waiting for that mutex is not durably
		// blocked, and the bubble's clock would stop. A back-off of 0 is a
		// timer that has expired when it is waited on: see oneP in
		// guard_test.go for what that costs under -race.
		oo.MinRetryBackoff, oo.MaxRetryBackoff = -1, -1
		rdb := redis.NewClient(&oo)
		c, err := redcoord.New(rdb, redcoord.WithLeaseTTL(leaseTTL), redcoord.WithMaxPollInterval(maxPoll),
			redcoord.WithObserver(p.observe))
		if err != nil {
			return nil, err
		}
		determine(c, pi, len(p.clients))
		p.rdbs = append(p.rdbs, rdb)
		p.clients = append(p.clients, c)
	}
	return p, nil
}

// observe records when a Hub of the process confirmed a new connection.
func (p *proc) observe(e redcoord.Event) {
	if e.Kind != redcoord.HubReconnected {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hubsUp = append(p.hubsUp, time.Now())
}

// hubUp returns the last time between from and to that a Hub of the
// process confirmed a new connection, and whether there was one.
func (p *proc) hubUp(from, to time.Time) (up time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.hubsUp {
		if !t.Before(from) && !t.After(to) {
			up, ok = t, true
		}
	}
	return up, ok
}

// determine gives Client si of process pi what a Client draws at random
// elsewhere: its id (random ids order the keys and members they name
// differently in every run), the holder metadata its acquires send (New
// encoded it with the random id: a request's bytes would differ between
// runs of one seed) and the back-off jitter RedLock draws, a fixed
// fraction of the range, one per Client.
func determine(c *redcoord.Client, pi, si int) {
	s := core.Of(c)
	s.ID = fmt.Sprintf("%030x%02x", pi+1, si)
	*s.RenewedLease("") = scripts.NewLeaseArg(s.Config.TTL, s.EncodeMeta(s.Config.TTL, false, ""))
	frac := time.Duration(3*pi+si+1) % 8
	s.Jitter = func(n time.Duration) time.Duration { return n * frac / 8 }
}

// close closes the process's Clients and connections, bounded.
func (p *proc) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range p.clients {
		_ = c.Close(ctx)
	}
	for _, r := range p.rdbs {
		_ = r.Close()
	}
}

// heal ends every fault of p that is still in effect.
func (p *proc) heal() {
	p.faults.Disarm()
	p.faults.Unstall()
	p.faults.Unblackhole()
	p.faults.CloseAll()
}

// close closes everything of w: processes first, then the network (its
// deliveries still waiting are dropped), then admin clients and servers.
func (w *world) close() {
	for _, p := range w.procs {
		p.close()
	}
	if w.net != nil {
		w.net.Close()
	}
	for _, a := range w.admin {
		_ = a.Close()
	}
	for _, m := range w.servers {
		m.Close()
	}
}

// newBubbleWorld makes n miniredis servers and procs processes, whose
// connections go through one simulated network (simnet_test.go); it must
// run inside a synctest bubble.
func newBubbleWorld(n, procs int, names []string) (*world, error) {
	w := &world{names: names, net: redistest.NewNet()}
	w.net.SetLatency(netLatency)
	for range n {
		m, o := redistest.Bubble()
		w.servers = append(w.servers, m)
		w.opts = append(w.opts, o)
		w.admin = append(w.admin, redis.NewClient(o))
	}
	for pi := range procs {
		opts := make([]*redis.Options, len(w.opts))
		for i, o := range w.opts {
			oo := *o
			oo.Dialer = w.net.Dialer(pi*netServers+i, o.Dialer)
			opts[i] = &oo
		}
		p, err := newProc(pi, opts, true)
		if err != nil {
			w.close()
			return nil, err
		}
		w.procs = append(w.procs, p)
	}
	return w, nil
}
