package rrwlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/rrwlock"
)

// These tests run in a synctest bubble on a miniredis whose clock is the
// bubble's, so durations are exact. The Client defaults hold: lease TTL and
// writer heartbeat 30s, renewed every 10s; poll interval 1s.

// timed is the outcome of a lock call and the bubble time it returned at.
type timed struct {
	err error
	at  time.Time
}

func timedAsync(ctx context.Context, lock func(context.Context) error) <-chan timed {
	ch := make(chan timed, 1)
	go func() {
		err := lock(ctx)
		ch <- timed{err, time.Now()}
	}()
	return ch
}

// readStream is n readers re-acquiring a read hold without pause, each
// holding it for hold, started a fraction of hold apart so that their holds
// overlap, and a check that no reader is inside with a writer.
type readStream struct {
	inside, most, writing, violations atomic.Int32
	stop                              atomic.Bool
	wg                                sync.WaitGroup
	errs                              chan error
}

func startReaders(ctx context.Context, clients []*redcoord.Client, name string, n int, hold time.Duration) *readStream {
	s := &readStream{errs: make(chan error, n)}
	for i := 0; i < n; i++ {
		m := rrwlock.New(clients[i%len(clients)], name)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			time.Sleep(time.Duration(i) * hold / time.Duration(n))
			for k := 0; k < 1_000_000 && !s.stop.Load(); k++ {
				if err := m.RLock(ctx); err != nil {
					s.errs <- err
					return
				}
				n := s.inside.Add(1)
				if s.writing.Load() != 0 {
					s.violations.Add(1)
				}
				for cur := s.most.Load(); n > cur && !s.most.CompareAndSwap(cur, n); cur = s.most.Load() {
				}
				time.Sleep(hold)
				s.inside.Add(-1)
				if err := m.RUnlock(ctx); err != nil {
					s.errs <- err
					return
				}
			}
		}()
	}
	return s
}

// write takes the write lock with w, holds it for hold among the readers,
// and returns how long Lock took.
func (s *readStream) write(ctx context.Context, t *testing.T, w *rrwlock.RWMutex, hold time.Duration) time.Duration {
	asked := time.Now()
	require.NoError(t, w.Lock(ctx))
	waited := time.Since(asked)
	s.writing.Add(1)
	if s.inside.Load() != 0 {
		s.violations.Add(1)
	}
	time.Sleep(hold)
	s.writing.Add(-1)
	require.NoError(t, w.Unlock(ctx))
	return waited
}

// end stops the readers and checks what they saw.
func (s *readStream) end(t *testing.T) {
	s.stop.Store(true)
	s.wg.Wait()
	close(s.errs)
	for err := range s.errs {
		require.NoError(t, err)
	}
	assert.Zero(t, s.violations.Load(), "a reader inside with the writer")
	assert.Greater(t, s.most.Load(), int32(2), "the readers did not overlap: the test proves little")
}

// 32 readers re-acquire without pause, each hold overlapping others: a
// writer that arrives waits only for the holds already taken (at most one
// hold), then gets the lock at once, and no reader is inside with it.
func TestWriterNotStarvedByReaders(t *testing.T) {
	const hold = time.Millisecond
	locktest.InBubble(t, 4, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		var clients []*redcoord.Client
		for _, p := range ps {
			clients = append(clients, p.C)
		}
		s := startReaders(ctx, clients, "n", 32, hold)
		time.Sleep(20 * hold) // a steady stream of overlapping readers
		waited := s.write(ctx, t, rrwlock.New(ps[0].C, "n"), hold)
		s.end(t)
		t.Logf("the writer waited %v; up to %d readers at once", waited, s.most.Load())
		assert.LessOrEqual(t, waited, hold, "the writer waited longer than the read holds taken before it")
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.WithoutMarkers(mr.Keys()))
	})
}

// A reader that dies keeps its read hold at most one lease TTL after its
// last renewal: a waiting writer gets the lock then, and not before.
func TestDeadReaderHoldsAtMostItsLease(t *testing.T) {
	locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		reader, w := rrwlock.New(ps[0].C, "n"), rrwlock.New(ps[1].C, "n")
		require.NoError(t, reader.RLock(ctx))
		time.Sleep(time.Second)
		wDone := timedAsync(ctx, w.Lock)
		time.Sleep(34 * time.Second) // past the first lease: the watchdog renews it
		synctest.Wait()
		select {
		case r := <-wDone:
			t.Fatalf("the writer got in while the reader lives: %v", r.err)
		default:
		}
		assert.Equal(t, 1, stateOf(t, w).WaitingWriters)

		killed := time.Now()
		ps[0].Kill()
		r := <-wDone
		require.NoError(t, r.err)
		ttl := ps[1].C.LeaseTTL()
		delay := r.at.Sub(killed)
		t.Logf("the writer got the lock %v after the reader died", delay)
		assert.GreaterOrEqual(t, delay, ttl-ttl/3, "the dead reader's lease was cut short")
		assert.LessOrEqual(t, delay, ttl+time.Second, "held longer than a lease TTL (and a poll interval)")
		require.NoError(t, w.Unlock(ctx))
		assert.Equal(t, []string{"rc:{n}:fence"}, locktest.WithoutMarkers(mr.Keys()))
	})
}

// A fixed lease is not renewed: Lost or RLost closes lease.Margin before it
// ends, and a waiter gets in when it ends. The wait is bounded by the blocker's lease, not by
// the poll interval (a minute here), even for a waiter that arrives in the
// lease's last millisecond (the scripts' wait hint is at least 1ms, never
// the 0 that PTTL gives then, which would mean "unknown").
func TestFixedLeaseEnds(t *testing.T) {
	const fixed = 5 * time.Second
	lostAt := fixed - lease.Margin(fixed) // when Lost or RLost closes
	for _, pair := range []struct{ blocker, waiter string }{{"read", "write"}, {"write", "read"}, {"write", "write"}} {
		for _, arrive := range []time.Duration{0, fixed - 500*time.Microsecond} {
			t.Run(fmt.Sprintf("%s blocks %s, arriving at %v", pair.blocker, pair.waiter, arrive), func(t *testing.T) {
				locktest.InBubble(t, 2, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
					ctx := context.Background()
					blocker := rrwlock.New(ps[0].C, "n")
					waiter := rrwlock.New(ps[1].C, "n", rrwlock.WithMaxPollInterval(time.Minute))
					take, lost, release := blocker.RLockWithLease, blocker.RLost, blocker.RUnlock
					if pair.blocker == "write" {
						take, lost, release = blocker.LockWithLease, blocker.Lost, blocker.Unlock
					}
					wait, unwait := waiter.RLock, waiter.RUnlock
					if pair.waiter == "write" {
						wait, unwait = waiter.Lock, waiter.Unlock
					}
					require.NoError(t, take(ctx, fixed))
					ended := lost()
					start := time.Now()
					until := func(d time.Duration) { time.Sleep(d - time.Since(start)) } // bubble time start+d
					var done <-chan timed
					if arrive < lostAt {
						until(arrive)
						done = timedAsync(ctx, wait)
					}
					until(lostAt - time.Millisecond)
					synctest.Wait()
					assert.False(t, locktest.IsClosed(ended), "closed more than the margin before the fixed lease ends")
					until(lostAt + time.Millisecond)
					synctest.Wait()
					assert.True(t, locktest.IsClosed(ended), "not closed the margin before the fixed lease ended")
					if done == nil {
						until(arrive)
						done = timedAsync(ctx, wait)
					}
					r := <-done
					require.NoError(t, r.err)
					assert.True(t, locktest.IsClosed(ended))
					assert.GreaterOrEqual(t, r.at.Sub(start), fixed, "the waiter got in before the blocker's lease ended in Redis")
					assert.LessOrEqual(t, r.at.Sub(start), fixed+2*time.Millisecond, "the waiter outwaited the blocker's lease")
					assert.ErrorIs(t, release(ctx), redcoord.ErrNotHeld)
					require.NoError(t, unwait(ctx))
				})
			})
		}
	}
}

// A waiting writer that dies holds new readers back at most one heartbeat
// TTL after its last renewal; one whose wait ends (ctx, Client closed)
// leaves at once and wakes them.
func TestEndedWaitingWriterReleasesReaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(p *locktest.Proc, cancel context.CancelFunc)
		dies bool
	}{
		{"crashed", func(p *locktest.Proc, _ context.CancelFunc) { p.Kill() }, true},
		{"cancelled", func(_ *locktest.Proc, cancel context.CancelFunc) { cancel() }, false},
		{"client closed", func(p *locktest.Proc, _ context.CancelFunc) { _ = p.C.Close(context.Background()) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
				ctx := context.Background()
				r, w, n := rrwlock.New(ps[0].C, "n"), rrwlock.New(ps[1].C, "n"), rrwlock.New(ps[2].C, "n")
				require.NoError(t, r.RLock(ctx))
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				wDone := timedAsync(wctx, w.Lock)
				time.Sleep(15 * time.Second) // the writer stays registered: each poll and the 10s tick renew it
				nDone := timedAsync(ctx, n.RLock)
				synctest.Wait()
				assert.Equal(t, 1, stateOf(t, r).WaitingWriters)
				assert.Len(t, nDone, 0, "a new reader passed a waiting writer")

				ended := time.Now()
				tc.end(ps[1], cancel)
				wr := <-wDone
				assert.ErrorIs(t, wr.err, redcoord.ErrNotAcquired)
				nr := <-nDone
				require.NoError(t, nr.err)
				delay := nr.at.Sub(ended)
				ttl := ps[2].C.LeaseTTL()
				t.Logf("the new reader got in %v after the writer's wait ended (%v)", delay, wr.err)
				if tc.dies {
					assert.GreaterOrEqual(t, delay, ttl-ttl/3, "the dead writer was dropped before its heartbeat lapsed: the test proves nothing")
					assert.LessOrEqual(t, delay, ttl+time.Second, "held readers back longer than a heartbeat TTL and a poll")
				} else {
					assert.True(t, errors.Is(wr.err, context.Canceled) || errors.Is(wr.err, redcoord.ErrClosed))
					assert.Zero(t, delay, "the writer's leave did not wake the reader at once")
				}
				assert.Zero(t, stateOf(t, r).WaitingWriters)
				require.NoError(t, n.RUnlock(ctx))
				require.NoError(t, r.RUnlock(ctx))
				assert.Empty(t, locktest.WithoutMarkers(mr.Keys()))
			})
		})
	}
}

// Each release wakes the waiters that can proceed at once, by message: the
// default poll interval (1s) would show as a delay. A writer's Unlock wakes
// every waiting reader in every process when no writer waits; the last
// RUnlock wakes one registered writer; an Unlock wakes the next writer, and
// the last writer's wakes the readers it held back.
func TestReleasesWakeWaiters(t *testing.T) {
	locktest.InBubble(t, 3, func(t *testing.T, mr *miniredis.Miniredis, ps []*locktest.Proc) {
		ctx := context.Background()
		wait := func(what string, chs ...<-chan timed) {
			t.Helper()
			released := time.Now()
			for _, ch := range chs {
				r := <-ch
				require.NoError(t, r.err, what)
				assert.Zero(t, r.at.Sub(released), "%s: not woken at once", what)
			}
		}
		w := rrwlock.New(ps[0].C, "n")
		var rs []*rrwlock.RWMutex
		var rDone []<-chan timed
		require.NoError(t, w.Lock(ctx))
		for i := 0; i < 4; i++ {
			rs = append(rs, rrwlock.New(ps[1+i%2].C, "n"))
			rDone = append(rDone, timedAsync(ctx, rs[i].RLock))
		}
		time.Sleep(100 * time.Millisecond) // all four wait, between two polls
		require.NoError(t, w.Unlock(ctx))
		wait("readers after a write", rDone...)

		ws := []*rrwlock.RWMutex{rrwlock.New(ps[1].C, "n"), rrwlock.New(ps[2].C, "n")}
		wDone := []<-chan timed{timedAsync(ctx, ws[0].Lock), timedAsync(ctx, ws[1].Lock)}
		late := rrwlock.New(ps[0].C, "n")
		synctest.Wait()
		lateDone := timedAsync(ctx, late.RLock) // held back by the waiting writers
		time.Sleep(100 * time.Millisecond)
		for _, r := range rs {
			require.NoError(t, r.RUnlock(ctx))
		}
		synctest.Wait() // one writer got the lock
		first, second := 0, 1
		if len(wDone[1]) == 1 {
			first, second = 1, 0
		}
		wait("a writer after the last reader", wDone[first])
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, ws[first].Unlock(ctx))
		wait("the next writer", wDone[second])
		time.Sleep(100 * time.Millisecond)
		assert.Len(t, lateDone, 0, "a reader passed the writers")
		require.NoError(t, ws[second].Unlock(ctx))
		wait("a reader held back by writers", lateDone)
		require.NoError(t, late.RUnlock(ctx))
	})
}

// A release wakes one registered writer, in its own process; a crashed
// writer's registration is woken once (see
// locktest.DeadRegistrationWokenOnce).
func TestDeadWaitingWriterIsWokenOnce(t *testing.T) {
	locktest.DeadRegistrationWokenOnce(t, locktest.DeadWaiter{
		Registry: "rc:{n}:wwaiters", Member: "crashed:1:1", Also: map[string]string{"rc:{n}:writers": "crashed:1"},
		Open: func(hc, lc *redcoord.Client) (hold, release, wait, done func(context.Context) error) {
			holder, live := rrwlock.New(hc, "n"), rrwlock.New(lc, "n")
			return holder.Lock, holder.Unlock, live.Lock, live.Unlock
		},
	})
}

// Releases wake live waiting writers before a dead process's registrations
// (see locktest.LiveWokenBeforeDead).
func TestReleaseWakesLiveWritersBeforeDeadOnes(t *testing.T) {
	locktest.LiveWokenBeforeDead(t, "rc:{n}:wwaiters", func(c *redcoord.Client) (lock, unlock func(context.Context) error) {
		m := rrwlock.New(c, "n")
		return m.Lock, m.Unlock
	})
}
