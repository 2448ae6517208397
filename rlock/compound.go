package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
)

// compound is what a handle over several Mutexes is made of (MultiMutex,
// RedLock): a hold.Tracker, as a single lock's handle has, tracks its
// holds (the turn its calls take, its count of re-entries, Lost, the
// contexts of a hold, and the gate that keeps the goroutines sharing the
// handle out of each other's holds), and its parts' holds keep each hold:
// it is lost once too few of them still hold it (see watch).
type compound struct {
	t    *hold.Tracker
	what string // names the handle in errors and its contexts' causes (errs.Tag)
}

func newCompound(what string) compound {
	t := hold.New()
	t.Tag(what)
	return compound{t: t, what: what}
}

// start begins an acquire: it checks with check, passes the gate (a ctx
// from the current hold's Context re-enters it; any other acquire waits
// for the handle's hold to end, or with block unset finds it held:
// acquire.ErrBusy), takes the handle's turn and reports whether it
// re-entered, having counted the re-entry. Unless err is set, the caller
// calls e.Exit and op.Stop when done.
func (c *compound) start(ctx context.Context, check func(context.Context) error, invalid error,
	block bool) (reentered bool, e hold.Entry, op *hold.Op, err error) {
	if err := check(ctx); err != nil {
		if invalid == nil { // a closed Client, a done ctx: say what did not happen too
			err = errs.Both(errs.ErrNotAcquired, err)
		}
		return false, hold.Entry{}, nil, err
	}
	if e, err = c.t.Enter(ctx, block); err != nil {
		return false, hold.Entry{}, nil, err
	}
	op = c.t.Op()
	b, err := op.Start(ctx) // fails for a re-entry of a hold that has ended
	if err == nil && e.Reentry() {
		err = c.t.Took(b, b.Token, c.t.Count()+1, hold.Upkeep{})
	}
	if err != nil {
		op.Stop()
		e.Exit()
		return false, hold.Entry{}, nil, err
	}
	return e.Reentry(), e, op, nil
}

// held records a fresh hold by parts, kept until fewer than need of them
// still hold it (see watch). If too few still hold it by the time they are
// watched, the hold has ended (Lost is closed) and held returns
// errTakenLost: no acquire reports a hold that a part no longer has.
func (c *compound) held(parts []*Mutex, need int, closedIsLost bool) error {
	if err := c.t.Took(hold.Belief{}, 0, 1, hold.Upkeep{Since: time.Now()}); err != nil {
		return err
	}
	lost := c.t.Lost()
	c.watch(parts, need, closedIsLost)
	if hold.Closed(lost) {
		return errTakenLost
	}
	return nil
}

// errTakenLost is held's error for a hold lost as it was taken. It also
// matches ErrNotAcquired: a TryLock returns it, a blocking acquire starts
// again (see retaking).
var errTakenLost = errs.LostAcquire("", "too few of the parts still held it as the hold was taken")

// retaking runs take, a fresh acquire from the gate on, and runs it again
// while a blocking one finds the hold lost as it was taken: that hold has
// ended, and with it the acquire's place at the gate.
func retaking(block bool, take func() error) error {
	for {
		if err := take(); !block || err != errTakenLost {
			return err
		}
	}
}

// watch ends the current hold as lost once fewer than need of parts still
// hold it: a part's hold lost, or ended by its Client's Close (with
// closedIsLost, also a part whose Client closed while it keeps a fixed
// lease; without, such a part counts until that lease ends). The hold's
// contexts then end with ErrClosed if the part that tipped it ended with
// its Client's Close, ErrLeaseLost otherwise. Each part is watched through
// a Context of its hold derived from the compound hold's, so that nothing
// of it is left once either ends; with closedIsLost, one goroutine per
// part also waits for its Client's Close, until the hold ends. A part
// whose hold ended before it was watched counts before watch returns.
func (c *compound) watch(parts []*Mutex, need int, closedIsLost bool) {
	hctx, _ := c.t.Context(context.Background(), c.what) // cancelled when the hold ends
	lost := c.t.Lost()
	var left atomic.Int64 // parts that may still go before the hold is lost
	left.Store(int64(len(parts) - need + 1))
	for _, m := range parts {
		var once sync.Once
		gone := func(closed bool) {
			once.Do(func() {
				if left.Add(-1) == 0 {
					c.t.EndIf(lost, closed)
				}
			})
		}
		partLost := m.Lost()
		pctx, cancel := m.Context(hctx)
		ended := func() {
			defer cancel()
			cause := context.Cause(pctx)
			switch {
			case hctx.Err() != nil: // the compound hold ended first
			case errors.Is(cause, errs.ErrClosed):
				gone(true)
			case errors.Is(cause, errs.ErrLeaseLost):
				gone(false)
			case hold.Closed(partLost): // lost before it was watched
				gone(m.h.S.Err() != nil)
			} // otherwise released
		}
		if pctx.Err() != nil {
			ended() // at once: see held
		} else {
			context.AfterFunc(pctx, ended)
		}
		if closedIsLost {
			done := m.h.S.Wait(0).Done
			if hold.Closed(done) {
				gone(true) // at once, as above
				continue
			}
			go func() {
				select {
				case <-done:
					gone(true)
				case <-hctx.Done():
				}
			}()
		}
	}
}

// release begins an Unlock (see Tracker.StartRelease): it reports
// ErrNotHeld for a handle that holds nothing and lost nothing (at once,
// not after an acquire under way), and counts a re-entry's release. For
// the last hold, or one that was lost, it returns last in the handle's
// turn: the caller releases the parts and calls ended.
func (c *compound) release(ctx context.Context) (last bool, err error) {
	if c.t.Count() == 0 && c.t.LostHold() == nil {
		return false, errs.Of(c.what, errs.ErrNotHeld, "not held by this handle")
	}
	if _, err := c.t.StartRelease(ctx, c.what); err != nil {
		return false, err
	}
	if n := c.t.Count(); n > 1 {
		return false, c.t.EndRelease(n-1, nil, c.what)
	}
	return true, nil
}

// ended records the release of the last hold's parts and gives the turn
// back: the hold ends, released, or lost if the release found it lost or
// some part's release failed (all is false). A hold is all of its parts,
// so once one is released the work it guards must stop, whatever became
// of the others; a part whose release failed is no longer renewed, and
// Unlock again releases it (see release).
func (c *compound) ended(all, lost bool) {
	if !all || lost {
		c.t.EndIf(c.t.Lost(), false)
	}
	_ = c.t.EndRelease(0, nil, c.what) // the caller says what became of the hold
}

// Context returns a copy of parent that is cancelled when the current hold
// ends: lost (ErrLeaseLost) or released (ErrNotHeld), at once with
// ErrNotHeld when the handle holds nothing or its hold was lost.
func (c *compound) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return c.t.Context(parent, c.what)
}

// extend gives the holds of the parts that held returns (read in the
// handle's turn) a fixed lease of length from now, all at once, and calls
// done in the turn when at least need of them did. Otherwise it fails with
// the parts' errors; the parts that did extend keep their fixed leases.
func (c *compound) extend(ctx context.Context, check func(context.Context) error, held func() []*Mutex, need int,
	length time.Duration, done func()) error {
	if err := check(ctx); err != nil {
		return err
	}
	if err := c.t.Take(ctx); err != nil {
		return err
	}
	defer c.t.Give()
	switch {
	case c.t.LostHold() != nil:
		return errs.Lost(c.what, "the hold was lost before this call")
	case !c.holding():
		return errs.Of(c.what, errs.ErrNotHeld, "not held by this handle")
	}
	parts := held()
	errList := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, m := range parts {
		wg.Go(func() { errList[i] = m.Extend(ctx, length) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errList {
		if err == nil {
			ok++
		}
	}
	if ok >= need {
		if done != nil {
			done()
		}
		return nil
	}
	return &errs.Error{Of: c.what, Detail: fmt.Sprintf("extended on %d of %d, %d needed", ok, len(parts), need),
		Cause: errs.Join(errList...)}
}

// releaseFully releases every hold m's handle has. A hold found gone
// (ErrNotHeld, ErrLeaseLost) or whose Client is closed (it lapses with its
// lease) is done with; lost reports a hold found lost. err is a failure
// that may leave the hold standing: it is still renewed, or reported lost
// once gone, and releaseFully again releases it. A part of a hold that
// closed its Lost is released too (its Unlock deletes what Redis may still
// have of it) when wasHeld is set.
func releaseFully(ctx context.Context, m *Mutex, wasHeld bool) (lost bool, err error) {
	if m.h.Hold.Count() == 0 && !(wasHeld && hold.Closed(m.Lost())) {
		return false, nil
	}
	for range maxReleases {
		err := m.Unlock(ctx)
		switch {
		case errors.Is(err, errs.ErrLeaseLost):
			return true, nil
		case errors.Is(err, errs.ErrNotHeld), errors.Is(err, errs.ErrClosed):
			return false, nil
		case err != nil:
			return false, err
		case m.h.Hold.Count() == 0:
			return false, nil
		}
	}
	return false, &errs.Error{Kind: kind, Name: m.h.Name, Detail: fmt.Sprintf("still held after %d releases", maxReleases)}
}

// maxReleases bounds releaseFully: a part's hold count is 1 (re-entries are
// counted by the compound), unless Redis counts more than the handle did.
const maxReleases = 8

// holding reports whether the handle holds.
func (c *compound) holding() bool { return c.t.Count() > 0 }

// Lost returns the latest hold's channel (see watch).
func (c *compound) Lost() <-chan struct{} { return c.t.Lost() }

// sweep releases, in the handle's turn, the holds that parts' handles have
// while the compound holds nothing: left by a release that failed while an
// acquire gave back what it took. It reports the parts it could not
// release.
func (c *compound) sweep(ctx context.Context, parts []*Mutex) []*Mutex {
	if err := c.t.Take(ctx); err != nil {
		return nil
	}
	defer c.t.Give()
	if c.holding() {
		return nil
	}
	return c.sweepLocked(ctx, parts)
}

// sweepLocked is sweep in the handle's turn, while it holds nothing.
func (c *compound) sweepLocked(ctx context.Context, parts []*Mutex) []*Mutex {
	var failed []*Mutex
	for _, m := range parts {
		if _, err := releaseFully(ctx, m, false); err != nil {
			failed = append(failed, m)
		}
	}
	return failed
}

// checkAll returns the first reason an operation of a handle over ms must
// not start: err (a bad argument to its constructor), a closed Client, or
// a done ctx.
func checkAll(ctx context.Context, err error, ms []*Mutex) error {
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := m.h.S.Check(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkOpen is checkAll for a release, which a done ctx does not stop.
func checkOpen(err error, ms []*Mutex) error { return checkAll(context.Background(), err, ms) }

// releaseContext returns the context a release of the parts ms is sent on:
// their Sessions' ReleaseContext, the longest of them (each part's Unlock
// bounds its own request by its own).
func releaseContext(ctx context.Context, ms []*Mutex) (context.Context, context.CancelFunc) {
	longest := ms[0]
	for _, m := range ms[1:] {
		if m.h.S.Config.TTL > longest.h.S.Config.TTL {
			longest = m
		}
	}
	return longest.h.S.ReleaseContext(ctx)
}
