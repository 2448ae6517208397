package chaos

import (
	"testing"
	"time"
)

// TestClockBackExcuse feeds checkFencing and excuseClockBack a hand-made
// history: h3 holds n1 with a token from the server's clock, h3's Forget
// deletes the fence, the clock steps back a minute, and h0's next hold takes
// a token from the lagging clock, below h3's. The docs allow it when the
// deletion may have come before the step with no hold between: a Forget
// that returned before the step, or one called before it whose reply came
// after (Redis ran it, the reply was lost, a retry answered). A Forget
// called after the step, one that failed, or a hold begun between the
// Forget's return and the step leaves the violation.
func TestClockBackExcuse(t *testing.T) {
	ms := time.Millisecond
	const high, low = 946684801520012, 946684743290040
	hold := func(h, seq int, tok uint64, start, end time.Duration) *holdRec {
		return &holdRec{h: h, proc: h % 3, names: []string{"n1"}, tokens: map[string]uint64{"n1": tok},
			start: start, end: end, endHow: "unlock", seq: seq}
	}
	forget := func(seq int, called, returned time.Duration, res string) []event {
		return []event{
			{at: called, seq: seq, kind: evCall, h: 3, proc: 1, what: "Forget deadline=3s", names: []string{"n1"}},
			{at: returned, seq: seq, kind: evReturn, h: 3, proc: 1, what: "Forget deadline=3s", res: res},
		}
	}
	step := event{at: 3190 * ms, kind: evFault, h: -1, proc: 1, what: "clock back(1m0s)"}
	cases := []struct {
		name    string
		events  []event
		between bool // a hold begins at 3100ms, between the Forget and the step
		excused bool
	}{
		{"returned before the step", append(forget(16, 2840*ms, 2900*ms, "ok"), step), false, true},
		{"reply after the step", append(forget(16, 2840*ms, 4440*ms, "ok"), step), false, true},
		{"called after the step", append(forget(16, 3200*ms, 3250*ms, "ok"), step), false, false},
		{"failed", append(forget(16, 2840*ms, 2900*ms, "error: timeout"), step), false, false},
		{"a hold between", append(forget(16, 2840*ms, 2900*ms, "ok"), step), true, false},
		{"no step", forget(16, 2840*ms, 2900*ms, "ok"), false, false},
	}
	for _, tc := range cases {
		holds := []*holdRec{hold(3, 7, high, 1520*ms, 1630*ms), hold(0, 17, low, 3290*ms, 3990*ms)}
		if tc.between {
			holds = append(holds, hold(1, 18, high+1, 3100*ms, 3150*ms))
		}
		vs := checkFencing(rlockPrim{}.caps(), holds, nil)
		if len(vs) != 1 {
			t.Fatalf("%s: want one fencing violation before the excuse, got %v", tc.name, vs)
		}
		left := excuseClockBack(vs, tc.events, holds)
		if got := len(left) == 0; got != tc.excused {
			t.Errorf("%s: excused=%v, want %v (%v)", tc.name, got, tc.excused, left)
		}
	}
}
