package rfairlock_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rfairlock"
)

func TestUncontendedAllocations(t *testing.T) {
	locktest.UncontendedAllocations(t, rfairlock.New(locktest.NewClient(t, redistest.Real(t).Client(t)), "allocs"), 30)
}
