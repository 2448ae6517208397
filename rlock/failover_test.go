package rlock_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
)

// Cluster: a manual failover and a killed master while a lock is held; 50
// trials per run counting double grants over failovers that may lose the
// acquire, with and without WAIT; and the stopped replica that makes the
// loss certain. Sentinel: a forced failover and a killed primary while a
// lock is held, and 2 double-grant trials per run between them (each waits
// about ten seconds for the sentinels to demote the previous primary).
func TestFailover(t *testing.T) { locktest.FailoverSuites(t, newExclusive, 50, 2) }
