package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestLinCatches feeds checkLin two hand-made histories of one name: holds
// of two handles one after the other pass; the same holds overlapping (h1
// acquires after h0's acquire returned and before h0's release was called)
// are a violation.
func TestLinCatches(t *testing.T) {
	ms := time.Millisecond
	hist := func(h1start time.Duration) ([]*holdRec, []event) {
		holds := []*holdRec{
			{h: 0, names: []string{"n0"}, start: 2 * ms, end: 10 * ms, endHow: "unlock", seq: 1},
			{h: 1, names: []string{"n0"}, start: h1start + ms, end: h1start + 5*ms, endHow: "unlock", seq: 3},
		}
		events := []event{
			{at: 1 * ms, seq: 1, kind: evCall, h: 0, what: "Lock", names: []string{"n0"}},
			{at: 2 * ms, seq: 1, kind: evReturn, h: 0, what: "Lock", res: "ok"},
			{at: 10 * ms, seq: 2, kind: evCall, h: 0, what: "Unlock", names: []string{"n0"}},
			{at: 11 * ms, seq: 2, kind: evReturn, h: 0, what: "Unlock", res: "ok"},
			{at: h1start, seq: 3, kind: evCall, h: 1, what: "Lock", names: []string{"n0"}},
			{at: h1start + ms, seq: 3, kind: evReturn, h: 1, what: "Lock", res: "ok"},
			{at: h1start + 5*ms, seq: 4, kind: evCall, h: 1, what: "Unlock", names: []string{"n0"}},
			{at: h1start + 6*ms, seq: 4, kind: evReturn, h: 1, what: "Unlock", res: "ok"},
		}
		return holds, (&recorder{events: events}).sorted()
	}
	c := rlockPrim{}.caps()
	holds, events := hist(20 * ms)
	if n, vs := checkLin(c, holds, events); n.checked != 1 || len(vs) != 0 {
		t.Fatalf("holds one after the other: checked %d, violations %v", n.checked, vs)
	}
	holds, events = hist(4 * ms)
	n, vs := checkLin(c, holds, events)
	if n.checked != 1 || len(vs) != 1 || !strings.Contains(vs[0].msg, "no mutex order") {
		t.Fatalf("overlapping holds: checked %d, violations %v", n.checked, vs)
	}
	t.Logf("%s", vs[0].msg)
	holds[0].endHow = "lost"
	if n, vs := checkLin(c, holds, events); n.checked != 0 || len(vs) != 0 {
		t.Fatalf("a hold that was lost: checked %d, violations %v", n.checked, vs)
	}
}
