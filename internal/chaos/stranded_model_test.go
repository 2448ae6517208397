package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestStrandedCatches feeds checkStranded hand-made samples: a waiter that
// waits through a fault-free stretch in which its name is free, by every
// belief and by Redis, for longer than strandBound is stranded; the same
// wait in a stretch with a fault in effect, or while Redis still has a
// lease on the name, or while a handle believes it holds, is not.
func TestStrandedCatches(t *testing.T) {
	ms := time.Millisecond
	c := rlockPrim{}.caps()
	waits := func() []waitRec {
		return []waitRec{{h: 1, proc: 1, seq: 5, names: []string{"n0"}, from: 100 * ms, to: 900 * ms, res: "ok"}}
	}
	samples := func(calm, held bool) []sample {
		var ss []sample
		for at := 0 * ms; at <= time.Second; at += 50 * ms {
			ss = append(ss, sample{at: at, calm: []bool{true, calm}, calmFrom: make([]time.Duration, 2), ok: true,
				names: map[string]nameState{"n0": {held: held}}})
		}
		return ss
	}
	// h0 holds until 300ms; h1 waits from 100ms and takes the name at 900ms.
	holds := []*holdRec{
		{h: 0, names: []string{"n0"}, start: 0, end: 300 * ms, endHow: "unlock", seq: 1},
		{h: 1, names: []string{"n0"}, start: 900 * ms, end: time.Second, endHow: "unlock", seq: 5},
	}

	vs := checkStranded(c, waits(), samples(true, false), holds, leaseTTL)
	if len(vs) != 1 || vs[0].check != "liveness" || !strings.Contains(vs[0].msg, "stranded waiter") {
		t.Fatalf("free, fault-free: want one stranded waiter, got %v", vs)
	}
	if want := 300*ms + strandBound; vs[0].at <= want || vs[0].at > want+50*ms {
		t.Fatalf("flagged at %v, want the first sample past %v", vs[0].at, want)
	}
	t.Logf("%s", vs[0].msg)

	if vs := checkStranded(c, waits(), samples(false, false), holds, leaseTTL); len(vs) != 0 {
		t.Fatalf("a fault in effect: want nothing, got %v", vs)
	}
	if vs := checkStranded(c, waits(), samples(true, true), holds, leaseTTL); len(vs) != 0 {
		t.Fatalf("Redis has a lease on the name: want nothing, got %v", vs)
	}

	// A fault ended at 500ms: the stretch begins calmMargin later, and the
	// wait ends before strandBound of it has passed.
	ss := samples(true, false)
	for i := range ss {
		ss[i].calmFrom[1] = 500*ms + calmMargin
	}
	if vs := checkStranded(c, waits(), ss, holds, leaseTTL); len(vs) != 0 {
		t.Fatalf("a fault until 500ms: want nothing, got %v", vs)
	}

	// h0 believes it holds until 850ms (a failed Unlock, its Context live).
	holds[0].end = 850 * ms
	if vs := checkStranded(c, waits(), samples(true, false), holds, leaseTTL); len(vs) != 0 {
		t.Fatalf("h0 believes it holds: want nothing, got %v", vs)
	}
}

// TestStrandedQueue: on a fair lock a live queue entry of a process that
// no longer waits pins the name until it expires; one of a process that
// waits does not.
func TestStrandedQueue(t *testing.T) {
	ms := time.Millisecond
	c := rfairlockPrim{}.caps()
	w := waitRec{h: 1, proc: 1, seq: 5, names: []string{"n0"}, from: 0, to: 900 * ms, res: "ok"}
	var ss []sample
	for at := 0 * ms; at <= time.Second; at += 50 * ms {
		ss = append(ss, sample{at: at, calm: []bool{true, true, true}, calmFrom: make([]time.Duration, 3), ok: true,
			names: map[string]nameState{"n0": {queue: []int{2}}}})
	}
	if vs := checkStranded(c, []waitRec{w}, ss, nil, leaseTTL); len(vs) != 0 {
		t.Fatalf("a stale queue entry ahead: want nothing, got %v", vs)
	}
	for i := range ss {
		ss[i].names["n0"] = nameState{queue: []int{1}}
	}
	if vs := checkStranded(c, []waitRec{w}, ss, nil, leaseTTL); len(vs) != 1 {
		t.Fatalf("the waiter's own entry: want one stranded waiter, got %v", vs)
	}
}

// TestFaultTrack: a delay armed keeps a stretch from being fault-free
// until it fired and its reply came; "heal all" disarms.
func TestFaultTrack(t *testing.T) {
	ft := newFaultTrack(1)
	ft.event(event{at: time.Second, proc: 0, kind: evFault, what: "delay(1.5s)"}, 1)
	ft.event(event{at: time.Second, proc: 0, kind: evFault, what: "deaf(1s)"}, 1)
	if len(ft.delays[0]) != 1 || ft.delays[0][0] != 1500*time.Millisecond || ft.active[0]["deaf"] != 1 {
		t.Fatalf("after delay and deaf: %+v", ft)
	}
	ft.event(event{at: 2 * time.Second, proc: 0, kind: evFault, what: "end of deaf"}, 1)
	ft.event(event{at: 2 * time.Second, proc: 0, kind: evFault, what: "clock(2s)"}, 1)
	if ft.active[0]["deaf"] != 0 || ft.calmFrom[0] != 2*time.Second+calmMargin {
		t.Fatalf("after end of deaf and a clock move: %+v", ft)
	}
	ft.event(event{at: 3 * time.Second, proc: 0, kind: evFault, what: "heal all"}, 1)
	if len(ft.delays[0]) != 0 {
		t.Fatalf("heal all left a delay armed: %+v", ft)
	}
}

// TestStrandedFairPermits: on a fair Semaphore a waiter for 1 permit behind
// a live queue entry for 2 waits by design while 1 is available; once every
// live entry fits in what is available, it does not, and neither does a
// waiter for 2 while a hold of 1 and one of 2 have ended.
func TestStrandedFairPermits(t *testing.T) {
	ms := time.Millisecond
	c := semPrim{fair: true}.caps()
	w := waitRec{h: 1, proc: 1, seq: 5, names: []string{"n0"}, n: 1, from: 0, to: 900 * ms, res: "ok"}
	waits := []waitRec{w, {h: 2, proc: 2, seq: 4, names: []string{"n0"}, n: 2, from: 0, to: 950 * ms, res: "ok"}}
	samples := func(ns nameState) []sample {
		var ss []sample
		for at := 0 * ms; at <= time.Second; at += 50 * ms {
			ss = append(ss, sample{at: at, calm: []bool{true, true, true}, calmFrom: make([]time.Duration, 3), ok: true,
				names: map[string]nameState{"n0": ns}})
		}
		return ss
	}
	holds := []*holdRec{{h: 0, names: []string{"n0"}, permits: 1, start: 0, end: time.Second, endHow: "unlock", seq: 1}}
	if vs := checkStranded(c, waits[:1], samples(nameState{avail: 1, queued: 3, queue: []int{2, 1}}), holds, leaseTTL); len(vs) != 0 {
		t.Fatalf("behind a head of 2 with 1 available: want nothing, got %v", vs)
	}
	if vs := checkStranded(c, waits[:1], samples(nameState{avail: 1, queued: 1, queue: []int{1}}), holds, leaseTTL); len(vs) != 1 {
		t.Fatalf("its own entry alone, 1 available: want one stranded waiter, got %v", vs)
	}
	if vs := checkStranded(c, waits[1:], samples(nameState{avail: 1, queued: 2, queue: []int{2}}), nil, leaseTTL); len(vs) != 0 {
		t.Fatalf("a waiter for 2 with 1 available: want nothing, got %v", vs)
	}
	holds = append(holds, &holdRec{h: 3, names: []string{"n0"}, permits: 2, start: 0, end: 200 * ms, endHow: "unlock"})
	holds[0].end = 100 * ms
	if vs := checkStranded(c, waits[1:], samples(nameState{avail: 2, queued: 2, queue: []int{2}}), holds, leaseTTL); len(vs) != 1 {
		t.Fatalf("a waiter for 2 with 2 available: want one stranded waiter, got %v", vs)
	}
}

// TestStrandedRemnant: a hold whose Unlock failed keeps its handle's next
// acquire waiting at the handle's gate until its lease may have ended; a
// fixed lease longer than the TTL (longest) keeps it that much longer,
// and the wait is stranded only once that has passed.
func TestStrandedRemnant(t *testing.T) {
	ms := time.Millisecond
	c := rfairlockPrim{}.caps()
	// h1's hold, its Context ended by its Unlock, which failed at 100ms;
	// h1 waits again from 200ms and takes the name at 2.9s.
	holds := []*holdRec{{h: 1, names: []string{"n0"}, start: 0, end: 100 * ms, endHow: "ctx", seq: 1, unlockRet: 100 * ms}}
	w := waitRec{h: 1, proc: 1, seq: 3, names: []string{"n0"}, from: 200 * ms, to: 2900 * ms, res: "ok"}
	var ss []sample
	for at := 0 * ms; at <= 3*time.Second; at += 50 * ms {
		ss = append(ss, sample{at: at, calm: []bool{true, true}, calmFrom: make([]time.Duration, 2), ok: true,
			names: map[string]nameState{"n0": {}}})
	}
	if vs := checkStranded(c, []waitRec{w}, ss, holds, 5*leaseTTL/2); len(vs) != 0 {
		t.Fatalf("within a fixed lease of 2.5s of the failed Unlock: want nothing, got %v", vs)
	}
	vs := checkStranded(c, []waitRec{w}, ss, holds, leaseTTL)
	if len(vs) != 1 {
		t.Fatalf("no lease beyond the TTL: want one stranded waiter, got %v", vs)
	}
	if want := 100*ms + leaseTTL*3/2 + calmMargin + strandBound; vs[0].at <= want || vs[0].at > want+50*ms {
		t.Fatalf("flagged at %v, want the first sample past %v", vs[0].at, want)
	}
}
