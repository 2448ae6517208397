package rlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
)

// compound is what a handle over several Mutexes is made of (MultiMutex,
// RedLock): its calls take turns, it counts its own re-entries, the Lost
// of its latest hold follows its parts' holds, and its gate keeps the
// goroutines that share the handle out of each other's holds, as a single
// lock's does (see hold.Gate).
type compound struct {
	turn chan struct{} // one call at a time, from its start to its reply
	gate *hold.Gate    // kept by the current hold until it is released or lost

	mu     sync.Mutex
	count  int           // hold count: re-entries are counted here
	lost   chan struct{} // the latest hold's (see Lost)
	stop   chan struct{} // closed when the latest hold is released
	what   string        // names the handle in errors and its contexts' causes (errs.Tag)
	scoped hold.Scopes   // the current hold's contexts
}

func newCompound(what string) compound {
	return compound{turn: make(chan struct{}, 1), gate: hold.NewGate(), lost: make(chan struct{}), what: what}
}

// start begins an acquire: it checks with check, passes the gate (a ctx
// from the current hold's Context re-enters it; any other acquire waits
// for the handle's hold to end, or with block unset finds it held:
// wait.ErrBusy), waits for the handle's turn and reports whether it
// re-entered, having counted the re-entry. Unless err is set, the caller
// calls e.Exit and give when done.
func (c *compound) start(ctx context.Context, check func(context.Context) error, invalid error, block bool) (reentered bool, e hold.Entry, err error) {
	if err := check(ctx); err != nil {
		if invalid == nil { // a closed Client, a done ctx: say what did not happen too
			err = errs.Both(errs.ErrNotAcquired, err)
		}
		return false, hold.Entry{}, err
	}
	c.mu.Lock()
	var held any
	if c.count > 0 && !hold.Closed(c.lost) {
		held = c.lost
	}
	c.mu.Unlock()
	if e, err = c.gate.Enter(ctx, held, block); err != nil {
		return false, hold.Entry{}, err
	}
	if err := c.take(ctx); err != nil {
		e.Exit()
		return false, hold.Entry{}, errs.Both(errs.ErrNotAcquired, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case e.Reentry() && c.count > 0 && c.lost == held && !hold.Closed(c.lost):
		c.count++
		return true, e, nil
	case e.Reentry(): // the hold it re-enters ended meanwhile, and its ctx with it
		c.give()
		if err := ctx.Err(); err != nil {
			return false, hold.Entry{}, errs.Both(errs.ErrNotAcquired, err)
		}
		return false, hold.Entry{}, errs.LostAcquire("%s: the hold this acquire re-entered has ended", c.what)
	}
	c.count = 0 // a hold left is lost: acquire afresh
	return false, e, nil
}

// held records a fresh hold by parts: its Lost closes once fewer than need
// of them still hold (a part's hold lost or ended by its Client's Close;
// with closedIsLost, also a part whose Client closed while it kept a fixed
// lease). Without closedIsLost, a part that keeps a fixed lease past its
// Client's Close is still watched: its Lost closes when that lease ends.
// The contexts of the hold then end with ErrClosed if the part that tipped
// it ended with its Client's Close, ErrLeaseLost otherwise. One goroutine
// per hold watches them; it ends then, at the hold's release, or when no
// part of a closed Client holds any more.
func (c *compound) held(parts []*Mutex, need int, closedIsLost bool) {
	lost, stop := make(chan struct{}), make(chan struct{})
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)}}
	for _, m := range parts {
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.Lost())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.h.S.Wait(0).Done)})
	}
	c.mu.Lock()
	c.count, c.lost, c.stop = 1, lost, stop
	c.gate.Keep(true) // the slot of the acquire that took it, in its turn
	c.mu.Unlock()
	go func() {
		alive, open := len(parts), len(parts)
		outlived := make([]bool, len(parts)) // a part's fixed lease outlived its Client's Close
		quiet := reflect.ValueOf((<-chan struct{})(nil))
		for {
			i, _, _ := reflect.Select(cases)
			if i == 0 {
				return
			}
			k := (i - 1) / 2
			closed := (i-1)%2 == 1
			m := parts[k]
			if closed && !closedIsLost && !hold.Closed(m.Lost()) && m.h.Hold.Count() > 0 {
				// Close ends a part's watched hold before its done closes:
				// this one keeps a fixed lease, whose timer closes its Lost.
				cases[2+2*k].Chan = quiet
				outlived[k] = true
				continue
			}
			cases[1+2*k].Chan, cases[2+2*k].Chan = quiet, quiet // the part's two cases go quiet
			if !closed || closedIsLost || hold.Closed(m.Lost()) {
				if alive--; alive < need {
					cause := fmt.Errorf("%w: %s: the hold was lost", errs.ErrLeaseLost, c.what)
					if m.h.S.Err() != nil && !outlived[k] {
						cause = fmt.Errorf("%w: %s: the hold is no longer kept", errs.ErrClosed, c.what)
					}
					c.mu.Lock()
					close(lost)
					if c.lost == lost && c.count > 0 { // still the current hold, not released
						c.endScopedLocked(cause)
						c.gate.End()
					}
					c.mu.Unlock()
					return
				}
			}
			if closed || outlived[k] {
				if open--; open == 0 {
					return
				}
			}
		}
	}()
}

// release begins an Unlock: it reports notHeld for a handle that holds
// nothing (at once, not after an acquire under way), and counts a
// re-entry's release. For the last hold it returns last, its Lost channel
// and the handle's turn: the caller releases the parts, calls ended, and
// gives the turn back.
func (c *compound) release(ctx context.Context, notHeld error) (last bool, lost <-chan struct{}, err error) {
	c.mu.Lock()
	count := c.count
	c.mu.Unlock()
	if count == 0 {
		return false, nil, notHeld
	}
	if err := c.take(ctx); err != nil {
		return false, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.count {
	case 0:
		c.give()
		return false, nil, notHeld
	case 1:
		return true, c.lost, nil
	}
	c.count--
	c.give()
	return false, nil, nil
}

// ended records the release of the last hold's parts: the hold ends, unless
// some part's release failed (all is false): the handle then still holds
// it, so that Unlock again releases what is left. lost says the release
// found the hold lost: its contexts get that cause.
func (c *compound) ended(all, lost bool) {
	if !all {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = 0
	close(c.stop)
	c.gate.End()
	if lost || hold.Closed(c.lost) {
		c.endScopedLocked(fmt.Errorf("%w: %s: the hold was lost", errs.ErrLeaseLost, c.what))
	} else {
		c.endScopedLocked(fmt.Errorf("%w: %s: released", errs.ErrNotHeld, c.what))
	}
}

// Context returns a copy of parent that is cancelled when the current hold
// ends: lost (ErrLeaseLost) or released (ErrNotHeld), at once with
// ErrNotHeld when the handle holds nothing or its hold was lost.
func (c *compound) Context(parent context.Context) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == 0 || hold.Closed(c.lost) {
		return hold.Ended(parent, fmt.Errorf("%w: %s: not held by this handle", errs.ErrNotHeld, c.what))
	}
	return c.scoped.Add(c.gate.Mark(parent, c.lost), &c.mu, c.what)
}

// endScopedLocked cancels the current hold's contexts with cause; the
// caller holds mu.
func (c *compound) endScopedLocked(cause error) {
	c.scoped.End(func(string) error { return cause })
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
	if err := c.take(ctx); err != nil {
		return err
	}
	defer c.give()
	switch {
	case !c.holding():
		return fmt.Errorf("%w: %s: not held by this handle", errs.ErrNotHeld, c.what)
	case hold.Closed(c.Lost()):
		return errs.Lost("%s: the hold was lost before this call", c.what)
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
	return fmt.Errorf("%s: extended on %d of %d, %d needed: %w", c.what, ok, len(parts), need, errors.Join(errList...))
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
	return false, fmt.Errorf("%s: still held after %d releases", errs.Tag(kind, m.h.Name), maxReleases)
}

// maxReleases bounds releaseFully: a part's hold count is 1 (re-entries are
// counted by the compound), unless Redis counts more than the handle did.
const maxReleases = 8

// holding reports whether the handle holds.
func (c *compound) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count > 0
}

// Lost returns the latest hold's channel (see held).
func (c *compound) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// sweep releases, in the handle's turn, the holds that parts' handles have
// while the compound holds nothing: left by a release that failed while an
// acquire gave back what it took. It reports the parts it could not
// release.
func (c *compound) sweep(ctx context.Context, parts []*Mutex) []*Mutex {
	if err := c.take(ctx); err != nil {
		return nil
	}
	defer c.give()
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

// take waits for the handle's turn, bounded by ctx.
func (c *compound) take(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another call on this handle: %w", ctx.Err())
	}
}

func (c *compound) give() { <-c.turn }
