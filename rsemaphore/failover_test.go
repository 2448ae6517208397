package rsemaphore_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
)

// A manual failover and a killed master on Cluster, a forced failover and a
// killed primary with Sentinel, while the one permit of an
// ExpirableSemaphore is held.
func TestFailover(t *testing.T) { locktest.FailoverSuites(t, newPermitLock, 0, 0) }
