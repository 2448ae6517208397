package rlock_test

import (
	"context"
	"testing"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rlock"
)

// Releases wake live waiters before a dead process's registrations (see
// locktest.LiveWokenBeforeDead).
func TestReleaseWakesLiveRegistrationsBeforeDeadOnes(t *testing.T) {
	locktest.LiveWokenBeforeDead(t, registry, func(c *redcoord.Client) (lock, unlock func(context.Context) error) {
		m := rlock.New(c, "n")
		return m.Lock, m.Unlock
	})
}
