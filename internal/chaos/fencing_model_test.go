package chaos

import (
	"testing"
	"time"
)

// TestFencingForcedLate feeds checkFencing a hand-made history: h3's
// TryLockWithLease takes n0 and its reply is held; another handle's
// ForceUnlock ends that hold and h1 gets the name with a greater token,
// its fixed lease ending before h3's reply comes; h3 then believes, with
// the smaller token, until its Lost closes. The force's window excuses it;
// without the window, or with h3's belief ending past its grace, it is a
// fencing violation.
func TestFencingForcedLate(t *testing.T) {
	ms := time.Millisecond
	const early, late = 946684803079019, 946684803489035
	holds := []*holdRec{
		{h: 1, proc: 0, names: []string{"n0"}, tokens: map[string]uint64{"n0": late},
			called: 3129 * ms, start: 3489 * ms, end: 4479 * ms, endHow: "lost", seq: 12},
		{h: 3, proc: 1, names: []string{"n0"}, tokens: map[string]uint64{"n0": early},
			called: 3079 * ms, start: 4579 * ms, end: 5554 * ms, endHow: "lost", seq: 9},
	}
	force := func(grace time.Duration) []window {
		return []window{{name: "n0", from: 3489 * ms, to: 3489 * ms, grace: grace, what: "ForceUnlock"}}
	}
	cases := []struct {
		name string
		ws   []window
		want int
	}{
		{"no window", nil, 1},
		{"within the grace", force(3 * time.Second), 0},
		{"past the grace", force(time.Second), 1},
	}
	for _, tc := range cases {
		if vs := checkFencing(rlockPrim{}.caps(), holds, tc.ws); len(vs) != tc.want {
			t.Errorf("%s: %d fencing violations, want %d (%v)", tc.name, len(vs), tc.want, vs)
		}
	}
}
