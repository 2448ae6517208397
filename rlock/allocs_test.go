package rlock_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

func TestUncontendedAllocations(t *testing.T) {
	locktest.UncontendedAllocations(t, rlock.New(locktest.NewClient(t, redistest.Real(t).Client(t)), "allocs"), 30)
}
