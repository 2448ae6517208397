package rsemaphore_test

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/scripts"
)

// The faults and the timing of TestLinearizability's histories.

// linSpanKey is the context key of an operation's linSpan.
type linSpanKey struct{}

// linSpan is the round trip of the last script an operation sent, in ns
// since the history's start.
type linSpan struct {
	mu        sync.Mutex
	call, ret int64
}

func (s *linSpan) get() (call, ret int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.call, s.ret
}

// linSpans is a go-redis hook that times every script sent with a linSpan
// in its context, go-redis's retries of it included.
type linSpans struct{ start time.Time }

func (linSpans) DialHook(next redis.DialHook) redis.DialHook { return next }

func (linSpans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h linSpans) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sp, _ := ctx.Value(linSpanKey{}).(*linSpan)
		if sp == nil || !strings.HasPrefix(cmd.Name(), "eval") {
			return next(ctx, cmd)
		}
		call := time.Since(h.start).Nanoseconds()
		err := next(ctx, cmd)
		ret := time.Since(h.start).Nanoseconds()
		sp.mu.Lock()
		sp.call, sp.ret = call, ret
		sp.mu.Unlock()
		return err
	}
}

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
// key count (5), five keys, four common arguments, then the request id (or
// the permit id, with the expirable semaphore's scripts).
func (d *linDropper) match(args []string) bool {
	if len(args) < 13 || args[0] != "EVALSHA" || (args[1] != d.acquire && args[1] != d.release) {
		return false
	}
	acquire, req := args[1] == d.acquire, args[1][:8]+args[12]
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
