package rsemaphore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// One cluster of 3 masters serves every subtest: starting one takes about
// two seconds.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	// 16 handles in 4 processes, 100 acquisitions each over 6 names that the
	// 3 masters serve, of 1 or 2 of a name's 3 permits: never more than 3
	// held at once, no error (no CROSSSLOT reply).
	for _, fair := range []bool{false, true} {
		t.Run("Semaphore/"+semMode(fair), func(t *testing.T) {
			occ := locktest.ClusterContend(t, cl, "sem-"+semMode(fair), 3, 16, 100,
				func(cs []*redcoord.Client, names []string, n int) locktest.Hold {
					sems := make([][]*rsemaphore.Semaphore, n)
					for w := range sems {
						for _, name := range names {
							sems[w] = append(sems[w], rsemaphore.New(cs[w%len(cs)], name, semOpts(fair)...))
						}
					}
					for _, s := range sems[0] {
						require.NoError(t, s.SetPermits(context.Background(), 3))
					}
					return func(ctx context.Context, w, i, k int) (int64, func(context.Context) error, error) {
						s, n := sems[w][i], 1+int64((w+k)%2)
						return n, func(ctx context.Context) error { return s.Release(ctx, n) }, s.Acquire(ctx, n)
					}
				})
			for i, o := range occ {
				assert.Greater(t, o.Peak(), int64(1), "name %d: holders never overlapped", i)
			}
		})
	}
	// The same with permits that have leases, one permit per acquisition.
	t.Run("ExpirableSemaphore", func(t *testing.T) {
		occ := locktest.ClusterContend(t, cl, "xsem", 3, 16, 100,
			func(cs []*redcoord.Client, names []string, n int) locktest.Hold {
				sems := make([][]*rsemaphore.ExpirableSemaphore, n)
				for w := range sems {
					for _, name := range names {
						sems[w] = append(sems[w], rsemaphore.NewExpirable(cs[w%len(cs)], name))
					}
				}
				for _, s := range sems[0] {
					require.NoError(t, s.SetPermits(context.Background(), 3))
				}
				return func(ctx context.Context, w, i, _ int) (int64, func(context.Context) error, error) {
					s := sems[w][i]
					p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
					return 1, func(ctx context.Context) error { return s.Release(ctx, p) }, err
				}
			})
		for i, o := range occ {
			assert.Greater(t, o.Peak(), int64(1), "name %d: holders never overlapped", i)
		}
	})
	t.Run("ReshardWhileWaiting", func(t *testing.T) { locktest.ReshardWhileWaiting(t, cl, newPermitLock) })
}

// permitLock is an ExpirableSemaphore of one permit used as a lock, for the
// helpers of exclusive holds (internal/locktest): Lock sets the permits to 1
// if nobody has, and acquires the permit (renewed by the watchdog); Unlock
// releases it.
type permitLock struct {
	s *rsemaphore.ExpirableSemaphore

	mu sync.Mutex        // guards p
	p  rsemaphore.Permit // the last permit acquired
}

func newPermitLock(c *redcoord.Client, name string) locktest.Exclusive {
	return &permitLock{s: rsemaphore.NewExpirable(c, name)}
}

func (l *permitLock) Lock(ctx context.Context) error {
	if _, err := l.s.TrySetPermits(ctx, 1); err != nil {
		return err
	}
	p, err := l.s.Acquire(ctx, rsemaphore.AcquireOptions{})
	if err == nil {
		l.mu.Lock()
		l.p = p
		l.mu.Unlock()
	}
	return err
}

func (l *permitLock) permit() rsemaphore.Permit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p
}

func (l *permitLock) Unlock(ctx context.Context) error { return l.s.Release(ctx, l.permit()) }
func (l *permitLock) Token() uint64                    { return l.permit().Token }
func (l *permitLock) Lost() <-chan struct{}            { return l.permit().Lost() }
