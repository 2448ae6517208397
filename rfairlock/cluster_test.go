package rfairlock_test

import (
	"testing"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rfairlock"
)

// newExclusive is New for the helpers of exclusive holds (internal/locktest).
func newExclusive(c *redcoord.Client, name string) locktest.Exclusive { return rfairlock.New(c, name) }

// On one cluster of 3 masters: mutual exclusion over names that every
// master serves, and a slot moved while waiters wait (locktest.ClusterSuite).
func TestCluster(t *testing.T) { locktest.ClusterSuite(t, newExclusive) }
