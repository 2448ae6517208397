package rsemaphore_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rsemaphore"
)

// queueSubject is one of the semaphores whose Client registers once per
// name and queues its blocked acquires locally, as the tests below drive
// it, one permit at a time, on the name "n".
type queueSubject struct {
	name     string
	registry string // its waiter registry's key
	sizes    string // the key of its registrations' sizes ("": it keeps none)
	leave    string // its leave script
	release  string // its release script
	// held sets the permits to 1 and takes that one with a handle of c,
	// and returns its release.
	held func(t *testing.T, c *redcoord.Client) (release func())
	// acquire returns an Acquire of a permit by a new handle of c, whose
	// release, on success, it returns too; try a TryAcquire.
	acquire func(c *redcoord.Client) func(context.Context) (release func() error, err error)
	try     func(ctx context.Context, c *redcoord.Client) (bool, error)
}

var queueSubjects = []queueSubject{
	{
		name: "Semaphore", registry: semRegistry, sizes: "rc:{n}:sem-sizes", leave: "sem_leave", release: "sem_release",
		held: func(t *testing.T, c *redcoord.Client) func() {
			ctx := context.Background()
			s := rsemaphore.New(c, "n")
			require.NoError(t, s.SetPermits(ctx, 1))
			require.NoError(t, s.Acquire(ctx, 1))
			return func() { require.NoError(t, s.Release(ctx, 1)) }
		},
		acquire: func(c *redcoord.Client) func(context.Context) (func() error, error) {
			s := rsemaphore.New(c, "n")
			return func(ctx context.Context) (func() error, error) {
				return func() error { return s.Release(context.Background(), 1) }, s.Acquire(ctx, 1)
			}
		},
		try: func(ctx context.Context, c *redcoord.Client) (bool, error) {
			return rsemaphore.New(c, "n").TryAcquire(ctx, 1)
		},
	},
	{
		name: "ExpirableSemaphore", registry: "rc:{n}:xsem-waiters", leave: "xsem_leave", release: "xsem_release",
		held: func(t *testing.T, c *redcoord.Client) func() {
			ctx := context.Background()
			s := rsemaphore.NewExpirable(c, "n")
			require.NoError(t, s.SetPermits(ctx, 1))
			p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
			require.NoError(t, err)
			return func() { require.NoError(t, s.Release(ctx, p)) }
		},
		acquire: func(c *redcoord.Client) func(context.Context) (func() error, error) {
			s := rsemaphore.NewExpirable(c, "n")
			return func(ctx context.Context) (func() error, error) {
				p, err := s.Acquire(ctx, rsemaphore.AcquireOptions{})
				return func() error { return s.Release(context.Background(), p) }, err
			}
		},
		try: func(ctx context.Context, c *redcoord.Client) (bool, error) {
			_, ok, err := rsemaphore.NewExpirable(c, "n").TryAcquire(ctx, rsemaphore.AcquireOptions{})
			return ok, err
		},
	},
}

// forQueueSubjects runs f in a bubble for each semaphore.
func forQueueSubjects(t *testing.T, f func(t *testing.T, q queueSubject)) {
	for _, q := range queueSubjects {
		t.Run(q.name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { f(t, q) }) })
	}
}

// registered returns how many Clients are registered to be woken on "n".
func (q queueSubject) registered(t *testing.T, p *locktest.Proc) int64 {
	t.Helper()
	n, err := p.RDB.ZCard(context.Background(), q.registry).Result()
	require.NoError(t, err)
	return n
}

// waitsOn starts an Acquire of a permit by a new handle of c with ctx, and
// returns a channel that gets its error; on success it sends i on order
// and releases the permit at once.
func (q queueSubject) waitsOn(ctx context.Context, t *testing.T, c *redcoord.Client, order chan<- int, i int) <-chan error {
	acquire := q.acquire(c)
	done := make(chan error, 1)
	go func() {
		release, err := acquire(ctx)
		if err == nil {
			order <- i
			assert.NoError(t, release())
		}
		done <- err
	}()
	return done
}

// A Client registers once for all its blocked Acquires of a name. A new
// Acquire no smaller than those already waiting queues behind them without
// a round trip (a TryAcquire still tries); a release wakes the Client's
// longest-waiting one that fits, each hand-off at once, in the order the
// Acquires came, at two round trips per acquisition (its try and its
// release), and a release by the Client hands the permit on to its next
// waiter without a message. The last one takes the registration away.
func TestLocalWaitersShareOneRegistration(t *testing.T) {
	forQueueSubjects(t, func(t *testing.T, q queueSubject) {
		ctx := context.Background()
		ps := semProcs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		release := q.held(t, hp.C)
		const k = 4
		order := make(chan int, k)
		var done [k]<-chan error
		done[0] = q.waitsOn(ctx, t, wp.C, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), q.registered(t, hp))
		wp.RT.Reset()
		for i := 1; i < k; i++ {
			done[i] = q.waitsOn(ctx, t, wp.C, order, i)
			synctest.Wait()
		}
		assert.Zero(t, wp.RT.Load(), "an Acquire behind local waiters made a round trip")
		assert.Equal(t, int64(1), q.registered(t, hp), "one registration per Client and name")
		ok, err := q.try(ctx, wp.C)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, int64(1), wp.RT.Load(), "a TryAcquire tries at once")
		assert.Equal(t, int64(1), q.registered(t, hp), "a TryAcquire leaves the registration be")

		msgs := hp.RDB.PSubscribe(ctx, "rc:{n}:*")
		defer msgs.Close()
		_, err = msgs.Receive(ctx)
		require.NoError(t, err)
		heard := msgs.Channel()
		wp.RT.Reset()
		released := time.Now()
		release()
		for i := range k {
			require.NoError(t, <-done[i])
			assert.Equal(t, i, <-order, "the local waiters take the permit in the order they came")
		}
		synctest.Wait()
		assert.Equal(t, released, time.Now(), "every hand-off at once")
		assert.Equal(t, int64(2*k), wp.RT.Load(), "two round trips per acquisition")
		assert.Zero(t, q.registered(t, hp), "the last local waiter took the registration away")
		var published []string
		for len(heard) > 0 {
			m := <-heard
			published = append(published, m.Channel+" "+m.Payload)
		}
		assert.Len(t, published, 1, "one message, the holder's release's; the local hand-offs sent none: %q", published)
	})
}

// A local waiter that gives up with a wake pending passes it to the next
// local waiter, and the Client stays registered; when the last local
// waiter gives up with a wake, the wake goes on to the next registered
// process. Nobody waits for a poll.
func TestCancelledLocalWaiterPassesTheWakeOn(t *testing.T) {
	forQueueSubjects(t, func(t *testing.T, q queueSubject) {
		ctx := context.Background()
		ps := semProcs(t, 3, nil)
		hp, wp, op := ps[0], ps[1], ps[2]
		release := q.held(t, hp.C)
		order := make(chan int, 3)
		hctx, cancelHead := context.WithCancel(ctx)
		head := q.waitsOn(hctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond) // the other process registers after wp
		other := q.waitsOn(ctx, t, op.C, order, 2)
		synctest.Wait()
		next := q.waitsOn(ctx, t, wp.C, order, 1)
		synctest.Wait()
		require.Equal(t, int64(2), q.registered(t, hp))

		// The head gives up; its leave's reply is held back, and its
		// subscription stays open meanwhile: the release's wake of wp
		// goes to it, and it passes the wake on as it closes.
		const held = 10 * time.Millisecond
		wp.Faults.DelayReply(locktest.EvalSHA(q.leave), held)
		cancelHead()
		synctest.Wait()
		start := time.Now()
		release() // wakes wp's head
		require.ErrorIs(t, <-head, context.Canceled)
		require.Equal(t, 1, wp.Faults.Delayed())
		require.NoError(t, <-next)
		require.NoError(t, <-other)
		assert.Equal(t, []int{1, 2}, []int{<-order, <-order}, "the next local waiter got the wake, then the other process")
		assert.LessOrEqual(t, time.Since(start), held, "no hand-off waited for a poll")
		assert.Zero(t, q.registered(t, hp))

		// The last local waiter gives up its wake: it goes to the next process.
		release = q.held(t, hp.C)
		lctx, cancelLast := context.WithCancel(ctx)
		last := q.waitsOn(lctx, t, wp.C, order, 0)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		other = q.waitsOn(ctx, t, op.C, order, 2)
		synctest.Wait()
		start = time.Now()
		release()
		cancelLast()
		_ = semGaveUp(t, <-last, order)
		require.NoError(t, <-other)
		assert.Equal(t, 2, <-order)
		assert.Equal(t, start, time.Now(), "the wake went on to the other process at once")
		assert.Zero(t, q.registered(t, hp))
	})
}

// semGaveUp checks how a waiter cancelled just after the release that woke
// it ended: given up (its wake went on), or, when its try ran before the
// cancel reached it, with the permit, which it then released at once to
// the next waiter, as a wake passed on would have. It reports whether the
// waiter took the permit.
func semGaveUp(t *testing.T, err error, order <-chan int) (took bool) {
	t.Helper()
	if err == nil {
		require.Equal(t, 0, <-order)
		t.Log("the cancelled waiter's try took the permit before the cancel reached it")
		return true
	}
	require.ErrorIs(t, err, context.Canceled)
	return false
}

// The heartbeat keeps a Client's one registration alive while any of its
// blocked Acquires remains, however long they wait; a Client that dies
// with blocked Acquires leaves that one registration, dropped at its
// deadline (a Semaphore's size with it).
func TestClientRegistrationLivesWithItsWaiters(t *testing.T) {
	forQueueSubjects(t, func(t *testing.T, q queueSubject) {
		ctx := context.Background()
		ps := semProcs(t, 2, nil)
		hp, wp := ps[0], ps[1]
		release := q.held(t, hp.C)
		order := make(chan int, 3)
		var cancels [3]context.CancelFunc
		var done [3]<-chan error
		for i := range 3 {
			var wctx context.Context
			wctx, cancels[i] = context.WithCancel(ctx)
			done[i] = q.waitsOn(wctx, t, wp.C, order, i)
			synctest.Wait()
		}
		time.Sleep(2*leaseTTL + 10*time.Second)
		assert.Equal(t, int64(1), q.registered(t, hp), "renewed while the waiters wait")
		cancels[0]()
		require.ErrorIs(t, <-done[0], context.Canceled)
		time.Sleep(2*leaseTTL + 10*time.Second)
		assert.Equal(t, int64(1), q.registered(t, hp), "renewed while waiters remain")

		wp.Kill() // dies with two blocked Acquires
		for i := 1; i < 3; i++ {
			require.Error(t, <-done[i])
		}
		assert.Equal(t, int64(1), q.registered(t, hp), "a dead Client leaves one registration")
		time.Sleep(leaseTTL) // its deadline: a lease TTL after its last renewal
		assert.Zero(t, q.registered(t, hp), "the dead Client's registration was dropped at its deadline")
		if q.sizes != "" {
			assert.Zero(t, hp.RDB.ZCard(ctx, q.sizes).Val(), "and its size with it")
		}
		release()
		for i := range cancels {
			cancels[i]()
		}
	})
}

// A release whose reply is lost, and which go-redis does not send again,
// may have been applied, handing its permit to this Client's waiters
// without a message: the Client wakes its waiters all the same, so that
// the hand-on is not lost with the reply (a spurious wake costs a try) and
// nobody waits for a poll.
func TestFailedReleaseHandsOnLocally(t *testing.T) {
	forQueueSubjects(t, func(t *testing.T, q queueSubject) {
		ctx := context.Background()
		p := semProcs(t, 1, func(_ int, o *redis.Options) { o.MaxRetries = -1 })[0]
		q.held(t, p.C)() // the permits set, and the scripts loaded
		release, err := q.acquire(p.C)(ctx)
		require.NoError(t, err)
		order := make(chan int, 1)
		waiter := q.waitsOn(ctx, t, p.C, order, 0)
		synctest.Wait()
		require.Equal(t, int64(1), q.registered(t, p))

		p.Faults.DropReply(locktest.EvalSHA(q.release))
		require.Error(t, release(), "the release's reply was lost")
		require.Equal(t, 1, p.Faults.Fired())
		failed := time.Now()
		require.NoError(t, <-waiter)
		assert.Equal(t, 0, <-order)
		assert.Equal(t, failed, time.Now(), "the waiter took the permit as soon as the release failed")
	})
}

// The same with a waiter heavier than the release: the permits it freed,
// with those free before it, may fit the waiter, which tries at once; and
// so when go-redis sent the release again and the copy found it applied,
// which tells nothing of what the first copy handed on.
func TestFailedReleaseWakesAHeavierWaiter(t *testing.T) {
	for _, retried := range []bool{false, true} {
		t.Run(map[bool]string{false: "failed", true: "retried"}[retried], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				p := semProcs(t, 1, func(_ int, o *redis.Options) {
					if !retried {
						o.MaxRetries = -1
					}
				})[0]
				s := rsemaphore.New(p.C, "n")
				require.NoError(t, s.SetPermits(ctx, 3))
				require.NoError(t, s.Acquire(ctx, 2))
				require.NoError(t, s.Acquire(ctx, 1))
				waiter := make(chan error, 1)
				go func() { waiter <- rsemaphore.New(p.C, "n").Acquire(ctx, 3) }()
				synctest.Wait()
				require.NoError(t, s.Release(ctx, 1)) // 1 free: the waiter does not fit
				synctest.Wait()

				p.Faults.DropReply(locktest.EvalSHA("sem_release"))
				err := s.Release(ctx, 2)
				if retried {
					require.NoError(t, err, "the copy go-redis sent again found the release applied")
				} else {
					require.Error(t, err, "the release's reply was lost")
				}
				require.Equal(t, 1, p.Faults.Fired())
				released := time.Now()
				require.NoError(t, <-waiter)
				assert.Equal(t, released, time.Now(), "the waiter took its 3 permits as soon as the release returned")
			})
		})
	}
}
