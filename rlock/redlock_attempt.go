package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/outage"
)

// A RedLock asks each server through a handle of its own, a Mutex: an
// owner in that server's Redis. A handle is used by one attempt after
// another only while every request it sent has been answered and what it
// was granted has been released. A handle whose request is still
// unanswered when its attempt decides, or whose release failed, is
// retired: its server gets a fresh handle, another owner, for the next
// attempts. Whatever the retired handle's request or release does later
// (a grant answered late, a release that reaches Redis late) is done to
// its own hold, never to a later attempt's, and a later attempt never
// re-enters a hold it did not take: on that server it finds the lock busy
// until the retired handle's hold is released, by the goroutine that
// waits for its answer or by the next attempt or Unlock (see settle).

// drift is the clock drift allowed for a lease of length l: servers'
// clocks may run at slightly different rates while it runs.
func drift(l time.Duration) time.Duration { return l/100 + 2*time.Millisecond }

// attempt asks every server at once and reports whether a majority
// granted the lock with validity left; if not, it gives back what was
// granted. It waits for every server's answer, up to the per-server bound,
// unless a majority can no longer grant it: the handles of the servers
// still to answer are retired then, and their grants given back as they
// come. It runs in the handle's turn. down reports that the servers that
// failed were all unreachable (outage.Transient, or no answer in time), so
// that a later attempt may succeed.
func (rl *RedLock) attempt(ctx context.Context, fixed time.Duration) (ok, down bool, err error) {
	length := rl.lease(fixed)
	per := max(length/10, 50*time.Millisecond)
	rl.settle(ctx)
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	answers := make(chan answer, len(rl.ms))
	for i, m := range rl.ms {
		// Each ends with its acquire: bounded by actx until the request is
		// sent, by go-redis's timeouts once it is.
		go func() {
			ok, err := hold.Tried(m.acquire(actx, fixed, false))
			answers <- answer{i, m, ok, err}
		}()
	}
	var granted []*Mutex
	var failed []error
	down = true
	answered := make([]bool, len(rl.ms))
	pending := len(rl.ms)
	// A server that does not answer in time counts as failed, whatever its
	// connection does (go-redis may wait for its read timeout, past ctx).
	timer := time.NewTimer(per)
	defer timer.Stop()
collect:
	for pending > 0 && len(granted)+pending >= rl.quorum { // every server that answers in time holds it
		select {
		case a := <-answers:
			pending--
			answered[a.i] = true
			switch {
			case a.err != nil:
				failed = append(failed, &errs.Error{Op: fmt.Sprintf("clients[%d]", a.i), Cause: a.err})
				timedOut := errors.Is(a.err, context.DeadlineExceeded) && ctx.Err() == nil // bounded by actx
				down = down && (timedOut || outage.Transient(a.err))
			case a.ok:
				granted = append(granted, a.m)
			}
		case <-timer.C:
			for i, ok := range answered {
				if !ok {
					failed = append(failed, fmt.Errorf("clients[%d]: no answer within %v", i, per))
				}
			}
			break collect
		}
	}
	if pending > 0 {
		for i, ok := range answered {
			if !ok {
				rl.retire(rl.ms[i])
			}
		}
		go rl.giveBackLate(answers, pending)
	}

	validity := length - time.Since(start) - drift(length)
	if len(granted) >= rl.quorum && validity > 0 {
		if err = rl.held(granted, length); err == nil {
			return true, false, nil
		}
	}
	for _, m := range release(granted) {
		rl.retire(m)
		rl.keepStale(m)
	}
	switch {
	case err != nil:
		return false, false, err
	case ctx.Err() != nil:
		return false, false, &errs.Error{Sentinel: errs.ErrNotAcquired, Of: rl.c.what, Cause: ctx.Err()}
	}
	if len(failed) > len(rl.ms)-rl.quorum {
		return false, down, &errs.Error{Sentinel: errs.ErrNotAcquired, Of: rl.c.what,
			Detail: fmt.Sprintf("%d of %d servers failed, so no majority can grant it", len(failed), len(rl.ms)),
			Cause:  errs.Join(failed...)}
	}
	return false, false, nil
}

// answer is one server's answer to an attempt.
type answer struct {
	i   int // the server's index in the Clients given
	m   *Mutex
	ok  bool
	err error
}

// release releases the holds of ms, all at once, and waits for them. It
// returns the handles whose release failed: their holds are still renewed
// until a later release ends them.
func release(ms []*Mutex) []*Mutex {
	ok := make([]bool, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), acquire.LeaveTimeout)
			defer cancel()
			_, err := releaseFully(ctx, m, true)
			ok[i] = err == nil
		})
	}
	wg.Wait()
	var left []*Mutex
	for i, m := range ms {
		if !ok[i] {
			left = append(left, m)
		}
	}
	return left
}

// giveBackLate gives back the grants among the n answers still to come,
// after their attempt decided without them; their handles are retired. A
// give-back that fails leaves its handle with the stale ones. It ends with
// the last answer, each bounded as its acquire is (see attempt).
func (rl *RedLock) giveBackLate(answers <-chan answer, n int) {
	for range n {
		if a := <-answers; a.ok {
			for _, m := range release([]*Mutex{a.m}) {
				rl.keepStale(m)
			}
		}
	}
}

// settle releases, in the handle's turn while it holds nothing, what
// earlier attempts and holds left: the holds of retired handles whose
// release failed, and those the servers' handles still have (a lost
// hold's grants). A server's handle whose release fails again is retired;
// the stale handles that still hold are tried again by the next call.
func (rl *RedLock) settle(ctx context.Context) {
	rl.mu.Lock()
	stale := rl.stale
	rl.stale = nil
	rl.mu.Unlock()
	for _, m := range stale {
		if _, err := releaseFully(ctx, m, true); err != nil {
			rl.keepStale(m)
		}
	}
	for _, m := range rl.ms {
		if _, err := releaseFully(ctx, m, false); err != nil {
			rl.retire(m)
			rl.keepStale(m)
		}
	}
}

// sweep settles, in the handle's turn, what earlier attempts left while the
// RedLock holds nothing.
func (rl *RedLock) sweep(ctx context.Context) {
	if rl.c.t.Take(ctx) != nil {
		return
	}
	defer rl.c.t.Give()
	if !rl.c.holding() {
		rl.settle(ctx)
	}
}

// retire gives m's server a fresh handle if m is its handle, in the
// handle's turn: m is never asked to acquire again.
func (rl *RedLock) retire(m *Mutex) {
	if i := rl.server(m); rl.ms[i] == m {
		rl.ms[i] = New(rl.clients[i], rl.name, rl.opts...)
	}
}

// server returns the index of m's server in the Clients given.
func (rl *RedLock) server(m *Mutex) int { return slices.Index(rl.ss, m.h.S) }

// keepStale records a retired handle that may still hold: settle releases
// it.
func (rl *RedLock) keepStale(m *Mutex) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.stale = append(rl.stale, m)
}
