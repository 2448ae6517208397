package rfairlock_test

import (
	"testing"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// Goroutines sharing one handle exclude each other; the hold's Context
// re-enters (see "Sharing a handle" at redcoord.Locker).
func TestSharedHandle(t *testing.T) {
	locktest.Shared(t, locktest.OneServer(func(c *redcoord.Client, name string) redcoord.Locker {
		return rfairlock.New(c, name)
	}))
}
