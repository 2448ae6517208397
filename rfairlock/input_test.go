package rfairlock_test

import (
	"context"
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// Bad input, a done ctx, a closed Client and another primitive's key are
// refused and change nothing in Redis (see locktest.BadInput); the queue's
// methods report bad input too.
func TestBadInput(t *testing.T) {
	locktest.BadInput(t, rfairlock.New, rfairlock.WithMaxPollInterval(0), "rlock",
		func(ctx context.Context, m *rfairlock.Mutex) map[string]error {
			return map[string]error{
				"QueueLength": locktest.Second(m.QueueLength(ctx)),
				"Position":    locktest.Second(m.Position(ctx)),
			}
		})
}
