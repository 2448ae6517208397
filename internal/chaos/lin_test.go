package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability: for the single-server exclusive locks (rlock, rfairlock,
// MultiMutex per name), a name's history is checked against a mutex whose
// Acquire(h) succeeds only when the name is free and whose Release(h)
// succeeds only when h holds it.
//
// Only definite histories are checked: those of a name on which every hold
// ended by a release that returned ok, and on which no ForceUnlock or
// Forget was called. A hold that ended otherwise (Lost, a done Context, a
// failed release, a closed Client, a run that ended first) ended in Redis
// at an instant the history does not know, so the name's history is left
// out. In a definite history, the operations are each hold's acquire (from
// its call to its return) and its last release; acquires that failed or
// found the name busy are left out, as they are in the rsemaphore test: a
// request whose reply was lost may have held the name for a while and
// given it back, which the model never saw.

// linOp is one operation of the mutex model.
type linOp struct {
	h       int
	acquire bool // false: a release
	seq     int
}

// linModel's state is the handle that holds the name, -1 when it is free.
var linModel = porcupine.Model{
	Init: func() any { return -1 },
	Step: func(state, input, _ any) (bool, any) {
		owner, in := state.(int), input.(linOp)
		if in.acquire {
			return owner == -1, in.h
		}
		return owner == in.h, -1
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(linOp)
		if in.acquire {
			return fmt.Sprintf("#%d h%d acquire -> ok", in.seq, in.h)
		}
		return fmt.Sprintf("#%d h%d release -> ok", in.seq, in.h)
	},
}

// linTimeout bounds one name's check; histories are a few dozen operations.
const linTimeout = 2 * time.Second

// linCount is what the check covered in one schedule.
type linCount struct {
	names, checked int // names with holds; of them, the definite ones checked
}

// linChecked reports whether the primitive's histories are checked.
func linChecked(c caps) bool {
	return c.servers == 1 && c.capacity == 1 && c.reentrant && !c.read
}

// checkLin checks every definite history of the schedule's names.
func checkLin(c caps, holds []*holdRec, events []event) (linCount, []violation) {
	var n linCount
	if !linChecked(c) {
		return n, nil
	}
	calls, rets := make(map[int]event), make(map[int]event)
	for _, e := range events {
		switch e.kind {
		case evCall:
			calls[e.seq] = e
		case evReturn:
			rets[e.seq] = e
		}
	}
	var out []violation
	for _, name := range holdNames(holds) {
		n.names++
		ops, ok := linHistory(name, holds, events, calls, rets)
		if !ok {
			continue
		}
		n.checked++
		res, info := porcupine.CheckOperationsVerbose(linModel, ops, linTimeout)
		if res == porcupine.Illegal {
			out = append(out, linViolation(name, ops, info))
		}
	}
	return n, out
}

// linHistory returns the operations of name's history, and false if it is
// not definite.
func linHistory(name string, holds []*holdRec, events []event, calls, rets map[int]event) ([]porcupine.Operation, bool) {
	for _, e := range events {
		if e.kind == evCall && (strings.HasPrefix(e.what, "ForceUnlock") || strings.HasPrefix(e.what, "Forget")) && hasName(e.names, name) {
			return nil, false
		}
	}
	var ops []porcupine.Operation
	for _, hr := range holds {
		if !hasName(hr.names, name) || hr.end <= hr.start {
			continue
		}
		if hr.endHow != "unlock" {
			return nil, false
		}
		ac, ar := calls[hr.seq], rets[hr.seq]
		rc, rr, ok := linRelease(hr, events, rets)
		if !ok {
			return nil, false
		}
		ops = append(ops,
			porcupine.Operation{ClientId: hr.h, Input: linOp{h: hr.h, acquire: true, seq: hr.seq}, Call: int64(ac.at), Return: int64(ar.at)},
			porcupine.Operation{ClientId: hr.h, Input: linOp{h: hr.h, seq: rc.seq}, Call: int64(min(rc.at, hr.end)), Return: int64(rr.at)})
	}
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return ops, len(ops) > 0
}

// linRelease finds the release that ended hr and reports whether it
// returned ok: the quiet phase's acquire that released at once, or the
// handle's latest Unlock (Resign) called at or before the hold's end.
func linRelease(hr *holdRec, events []event, rets map[int]event) (call, ret event, ok bool) {
	if r, done := rets[hr.seq]; done && strings.Contains(r.res, ", released: ") {
		return r, r, strings.HasSuffix(r.res, ", released: ok")
	}
	for _, e := range events {
		if e.at > hr.end {
			break
		}
		if e.kind == evCall && e.h == hr.h && strings.HasPrefix(e.what, "Unlock") {
			call = e
		}
	}
	if call.what == "" {
		return call, ret, false
	}
	ret, done := rets[call.seq]
	return call, ret, done && ret.res == "ok"
}

func hasName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// linViolation reports a history that no order of its operations explains,
// with the longest prefix of it that one order does.
func linViolation(name string, ops []porcupine.Operation, info porcupine.LinearizationInfo) violation {
	v := violation{check: "linearizability", name: name, seq: int(^uint(0) >> 1)}
	var lines []string
	for _, op := range ops {
		in := op.Input.(linOp)
		v.seq = min(v.seq, in.seq)
		v.at = max(v.at, time.Duration(op.Return))
		lines = append(lines, fmt.Sprintf("[%.3fs, %.3fs] %s", time.Duration(op.Call).Seconds(), time.Duration(op.Return).Seconds(),
			linModel.DescribeOperation(op.Input, op.Output)))
	}
	longest := 0
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			longest = max(longest, len(l))
		}
	}
	v.msg = fmt.Sprintf("no mutex order explains the %d operations (the longest explained prefix has %d):\n%s",
		len(ops), longest, strings.Join(lines, "\n"))
	return v
}
