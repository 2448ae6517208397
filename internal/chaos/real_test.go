package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/redistest"
)

// The real-server tier: a few short schedules per primitive on a
// redis-server child process, in real time, with the faults of a server:
// a restart that loses its data, a restart that keeps it (appendonly,
// fsync always), and a SIGSTOP shorter or longer than the lease. The
// schedule is drawn from its seed as in the bubble tier, but what the
// server and the clock do in between is not, so it is best-effort.
//
// Windows: a restart without persistence forgets every hold; the package
// docs (Loss) promise only that the holder's Lost closes a hundredth of
// the lease before its lease could end in Redis, counted from the last
// acknowledged renewal, which was sent before the restart. So an old
// holder may go on believing until one lease after the server was killed,
// not after. A restart with persistence and a SIGSTOP of any length open
// no window: the hold stays in Redis, or its lease runs out in Redis after
// the holder's Lost closed.

const (
	realSchedules = 3  // per primitive
	realSteps     = 12 // steps with faults; the quiet phase follows
	// A server fault is every realFaultEvery-th step: 3 per schedule.
	realFaultEvery = 4
)

// realPrims are the primitives the real tier runs.
var realPrims = []string{"rlock", "rfairlock", "relection", "semaphore"}

// The server faults of the real tier.
type serverFault uint8

const (
	sRestartEmpty serverFault = iota // kill, remove the AOF and RDB files, start again
	sRestartKept                     // kill and start again: the AOF has every write
	sStopShort                       // SIGSTOP for a quarter of the lease
	sStopLong                        // SIGSTOP for one and a half leases
)

var serverFaultNames = [...]string{"restart without persistence", "restart with persistence",
	"SIGSTOP(250ms)", "SIGSTOP(1.5s)"}

// realFault returns the kind of the k-th fault of schedule seed: the kinds
// take turns, from a point that the seed sets, so that a primitive's few
// schedules see each kind. A Semaphore's permits have no lease and no Lost,
// so a restart that forgets them is not drawn for it.
func realFault(seed uint64, k int, c caps) serverFault {
	kinds := []serverFault{sRestartEmpty, sRestartKept, sStopShort, sStopLong}
	if !c.fenced {
		kinds = kinds[1:]
	}
	return kinds[(int(seed%uint64(len(kinds)))+k)%len(kinds)]
}

// TestReal runs the real-server tier: realSchedules seeds per primitive
// (REDCOORD_CHAOS_REAL_SCHEDULES=<n>: n of them; REDCOORD_CHAOS_SEED: the
// one it names), the primitives in parallel, each schedule on a
// redis-server of its own.
func TestReal(t *testing.T) {
	_, only, err := schedules()
	if err != nil {
		t.Fatal(err)
	}
	n := realSchedules
	if s := os.Getenv("REDCOORD_CHAOS_REAL_SCHEDULES"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("REDCOORD_CHAOS_REAL_SCHEDULES=%q: want a positive count", s)
		}
	}
	for _, name := range realPrims {
		var mk func(uint64) primitive
		for _, p := range primitives {
			if p.name == name {
				mk = p.make
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var sum summary
			for i := range n {
				seed := uint64(i + 1)
				if only != 0 {
					if i > 0 {
						break
					}
					seed = only
				}
				res := runReal(t, seed, mk(seed))
				sum.add(res)
				if os.Getenv("REDCOORD_CHAOS_VERBOSE") != "" {
					t.Logf("seed %d history:\n%s", seed, res.text)
				}
				for i, v := range res.violations {
					t.Errorf("%s", strings.Replace(report(name+"/real", seed, v, res.events, res.known[i]),
						"-run 'TestChaos/"+name+"/real$'", "-run 'TestReal/"+name+"$'", 1))
				}
			}
			t.Logf("%s", sum.line(name+"/real"))
		})
	}
}

// runReal runs one schedule of p on a redis-server of its own.
func runReal(t *testing.T, seed uint64, p primitive) result {
	srv := redistest.StartRestartable(t, "--appendonly", "yes", "--appendfsync", "always")
	defer srv.Kill(t)
	o := srv.Options()
	w := &world{names: []string{"n0", "n1", "n2"}, opts: []*redis.Options{o}, admin: []*redis.Client{redis.NewClient(o)}}
	defer w.close()
	for pi := range procsPerSchedule {
		pr, err := newProc(pi, w.opts, false)
		if err != nil {
			t.Fatal(err)
		}
		w.procs = append(w.procs, pr)
	}
	if err := p.setup(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	rn := newRun(seed, p, w, false)
	rn.driveReal(t, srv)
	rn.wg.Wait()
	rn.rec.finish()
	return rn.result()
}

// driveReal is drive with server faults instead of process faults.
func (rn *run) driveReal(t *testing.T, srv *redistest.Restartable) {
	k := 0
	for step := range realSteps {
		rn.sleep(drawGap(rn.r))
		if step%realFaultEvery == realFaultEvery/2 {
			rn.serverFault(t, srv, realFault(rn.seed, k, rn.c))
			k++
		} else {
			h := rn.r.IntN(len(rn.hs))
			if rn.isBusy(h) || rn.w.procs[rn.hproc[h]].closed {
				rn.settle()
				continue
			}
			live := 0
			for _, p := range rn.w.procs {
				if !p.closed {
					live++
				}
			}
			rn.issue(drawOp(rn.r, rn.c, h, rn.rec.holding(h, false), rn.rec.holding(h, true), live > 2), false)
		}
		rn.settle()
	}
	rn.quiet()
}

// serverFault sets off f and returns once it is over: the server answers
// again.
func (rn *run) serverFault(t *testing.T, srv *redistest.Restartable, f serverFault) {
	rn.faults++
	rn.rec.fault(-1, serverFaultNames[f]) // proc -1: the server
	from := rn.rec.now()
	switch f {
	case sRestartEmpty:
		srv.Kill(t)
		for _, f := range []string{"appendonlydir", "dump.rdb"} {
			if err := os.RemoveAll(filepath.Join(srv.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		srv.Restart(t)
		to := rn.rec.now()
		rn.mu.Lock()
		rn.windows = append(rn.windows, window{from: from, to: to, grace: max(0, leaseTTL-(to-from)), what: serverFaultNames[f]})
		rn.mu.Unlock()
	case sRestartKept:
		srv.Restart(t)
	case sStopShort, sStopLong:
		d := leaseTTL / 4
		if f == sStopLong {
			d = leaseTTL * 3 / 2
		}
		srv.Pause(t)
		time.Sleep(d)
		srv.Resume(t)
	}
	rn.rec.fault(-1, fmt.Sprintf("end of %s after %v", serverFaultNames[f], (rn.rec.now()-from).Round(time.Millisecond)))
}
