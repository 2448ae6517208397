package chaos

import (
	"regexp"
	"strings"
	"testing"
)

// TestReplay runs seeds twice and compares the recorded histories byte for
// byte: the bubble tier must be a function of its seed. One thing is not:
// when several scripts run at one instant of the bubble's clock, the order
// in which miniredis serves their connections is the goroutine scheduler's,
// and the tokens they get (the clock in microseconds, then +1 each) follow
// it, and so may the outcome of two acquires racing at that instant.
// RedLock's back-off between attempts is drawn from the global math/rand
// source. Tokens are compared without their last three digits, and a
// primitive fails only if no seed replays byte for byte (RedLock: is
// reported, never fails); a divergence is logged where it begins.
func TestReplay(t *testing.T) {
	for _, p := range primitives {
		t.Run(p.name, func(t *testing.T) {
			same := 0
			for seed := uint64(1); seed <= 5; seed++ {
				a := sameInstant.ReplaceAllString(runBubble(t, p.name, seed, p.make(seed)).text, "${1}xxx")
				b := sameInstant.ReplaceAllString(runBubble(t, p.name, seed, p.make(seed)).text, "${1}xxx")
				if a == b {
					same++
					continue
				}
				al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
				for i := range min(len(al), len(bl)) {
					if al[i] != bl[i] {
						t.Logf("seed %d: histories differ at line %d:\n  first:  %s\n  second: %s", seed, i+1, al[i], bl[i])
						break
					}
				}
			}
			t.Logf("%s: %d of 5 seeds replayed byte for byte", p.name, same)
			if same == 0 && p.name != "redlock" {
				t.Errorf("%s: no seed replayed byte for byte", p.name)
			}
		})
	}
}

// sameInstant matches a token's microseconds within its millisecond.
var sameInstant = regexp.MustCompile(`(=\d+)\d{3}\b`)
