package rfairlock_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
)

// As rlock's: on Cluster, a manual failover, a killed master, 50 trials per
// run counting double grants and the stopped replica; on Sentinel, a forced
// failover and a killed primary, without trials (rlock has them: the
// ten-second demotion before each would double the package's test time).
func TestFailover(t *testing.T) { locktest.FailoverSuites(t, newExclusive, 50, 0) }
