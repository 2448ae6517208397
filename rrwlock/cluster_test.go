package rrwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rrwlock"
)

// newWriter makes the write side of an RWMutex, for the helpers of
// exclusive holds.
func newWriter(c *redcoord.Client, name string) locktest.Exclusive { return rrwlock.New(c, name) }

// One cluster of 3 masters serves both subtests: starting one takes about
// two seconds.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	// 4 writers and 12 readers in 4 processes, 200 acquisitions each over 6
	// names that the 3 masters serve: a writer is alone (it counts for all
	// 12 readers and one more), readers share; no error (no CROSSSLOT reply).
	t.Run("ReadersAndWriters", func(t *testing.T) {
		const workers, readers = 16, 12
		occ := locktest.ClusterContend(t, cl, "rw", readers+1, workers, 200,
			func(cs []*redcoord.Client, names []string, n int) locktest.Hold {
				handles := make([][]*rrwlock.RWMutex, n)
				for w := range handles {
					for _, name := range names {
						handles[w] = append(handles[w], rrwlock.New(cs[w%len(cs)], name))
					}
				}
				return func(ctx context.Context, w, i, _ int) (int64, func(context.Context) error, error) {
					m := handles[w][i]
					if w%(workers/(workers-readers)) == 0 { // every 4th
						return readers + 1, m.Unlock, m.Lock(ctx)
					}
					return 1, m.RUnlock, m.RLock(ctx)
				}
			})
		for i, o := range occ {
			assert.Greater(t, o.Peak(), int64(1), "name %d: readers never shared it", i)
		}
	})
	t.Run("ReshardWhileWaiting", func(t *testing.T) { locktest.ReshardWhileWaiting(t, cl, newWriter) })
}
