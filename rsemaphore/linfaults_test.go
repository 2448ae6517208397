package rsemaphore_test

import (
	"strconv"
	"sync"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/internal/scripts"
)

// The faults of TestLinearizability's histories (locktest.Spans times them).

// linDropper drops the replies of one semaphore's acquire and release
// scripts at random, keeping linArmed DropReply faults armed. A release, and most
// acquires, lose at most linMaxDrops replies, so go-redis's last attempt
// gets through; a doomed acquire loses every one, so its call fails.
//
// Whether a command's reply is dropped depends only on its script, its
// request (or permit) id and on how many of that request's replies were
// dropped before: every armed
// fault that Faults asks about one command gets the same answer, so arming
// several does not raise the rate, and a retry gets a fresh draw.
type linDropper struct {
	faults           *redistest.Faults
	seed             uint64
	acquire, release string        // the scripts' SHAs
	taken            chan struct{} // an armed fault was taken: arm another
	quit, done       chan struct{}
	once             sync.Once

	mu        sync.Mutex // guards the fields below
	on        bool
	dropped   map[string]int // script and request id -> replies dropped
	nAcquires int            // replies dropped, by script
	nReleases int
}

const (
	linArmed    = 8
	linDropRate = 0.15
	linDoomRate = 0.04
	linMaxDrops = 3 // go-redis's MaxRetries: the fourth attempt gets through
)

func newLinDropper(f *redistest.Faults, seed uint64, acquire, release string) *linDropper {
	d := &linDropper{
		faults: f, seed: seed, acquire: scripts.SHA(acquire), release: scripts.SHA(release),
		taken: make(chan struct{}, linArmed), quit: make(chan struct{}), done: make(chan struct{}),
		dropped: make(map[string]int),
	}
	go d.run()
	return d
}

// run arms a fault whenever an armed one has been taken.
func (d *linDropper) run() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return
		case <-d.taken:
			d.faults.DropReply(d.match)
		}
	}
}

// start arms the first faults.
func (d *linDropper) start() {
	d.mu.Lock()
	d.on = true
	d.mu.Unlock()
	for range linArmed {
		d.faults.DropReply(d.match)
	}
}

// stop stops dropping and waits for run to exit. Idempotent.
func (d *linDropper) stop() {
	d.mu.Lock()
	d.on = false
	d.mu.Unlock()
	d.once.Do(func() { close(d.quit) })
	<-d.done
}

func (d *linDropper) counts() (acquires, releases int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nAcquires, d.nReleases
}

// draw returns a number in [0, 1) fixed by the seed, the request id and k.
func (d *linDropper) draw(req string, k int) float64 {
	x := d.seed ^ uint64(k)*0x9e3779b97f4a7c15
	for i := 0; i < len(req); i++ {
		x = (x ^ uint64(req[i])) * 0x100000001b3
	}
	// splitmix64's finalizer
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// match is the DropReply matcher. Its arguments are EVALSHA, the SHA, the
// key count, the keys, four common arguments, then the request id (or the
// permit id, with the expirable semaphore's scripts).
func (d *linDropper) match(args []string) bool {
	if len(args) < 3 || args[0] != "EVALSHA" || (args[1] != d.acquire && args[1] != d.release) {
		return false
	}
	nkeys, err := strconv.Atoi(args[2])
	if err != nil || len(args) <= 3+nkeys+4 {
		return false
	}
	acquire, req := args[1] == d.acquire, args[1][:8]+args[3+nkeys+4]
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.dropped[req]
	doomed := acquire && d.draw(req, -1) < linDoomRate
	if !d.on || (!doomed && (k >= linMaxDrops || d.draw(req, k) >= linDropRate)) {
		return false
	}
	d.dropped[req] = k + 1
	if acquire {
		d.nAcquires++
	} else {
		d.nReleases++
	}
	select {
	case d.taken <- struct{}{}:
	default:
	}
	return true
}
