package redistest

import (
	"os"
	"strconv"
	"time"
)

// defaultPatience is the factor Patience stretches a bound by: a 2-core
// machine at load 20 gives each runnable thread about a tenth of a core,
// so a wait that an idle machine ends in d may take ten times as long
// there.
const defaultPatience = 10

// Patience returns d, a bound on real time that an idle machine stays well
// within, stretched for a loaded one: by REDCOORD_TEST_PATIENCE when it is
// a positive number, by defaultPatience otherwise. Use it for a bound
// that only ends a wait gone wrong (a topology that never settles, a
// waiter that never registers): a test takes no longer for it when all is
// well, and a loaded machine does not make it fail. It is no way to time
// a behaviour; a wait that an event can end should wait for that event.
func Patience(d time.Duration) time.Duration {
	f := float64(defaultPatience)
	if v, err := strconv.ParseFloat(os.Getenv("REDCOORD_TEST_PATIENCE"), 64); err == nil && v > 0 {
		f = v
	}
	return time.Duration(float64(d) * f)
}
