package rrwlock_test

import (
	"testing"

	"github.com/redcoord/redcoord/internal/locktest"
)

// A manual failover and a killed master on Cluster, a forced failover and a
// killed primary with Sentinel, while a write lock is held.
func TestFailover(t *testing.T) { locktest.FailoverSuites(t, newWriter, 0, 0) }
