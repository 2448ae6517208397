// Package hold is what the primitives' handles share: the Base of every
// handle (argument checks, the owner and its request ids); a handle's view
// of one of its holds (Tracker: count, fencing token, the watchdog lease or
// fixed-lease timer, the channel that reports the hold lost, and the
// release and extend requests that change them), which the locks keep one
// of and an expirable semaphore keeps one of per permit; the lock Handle
// around a Tracker (the lock hash's keys, Unlock, ForceUnlock and the state
// reads); the Gate that keeps the goroutines sharing a handle out of each
// other's holds; and the Heartbeat that keeps a waiter registered in Redis
// (rfairlock's queue, rrwlock's waiting writers).
package hold

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Tracker tracks one handle's hold. Its zero value is not usable; use New.
//
// A handle's acquire and release requests are serialised, each from reading
// what the handle holds (the Belief it sends) to recording Redis's reply
// (Took, Released): the scripts re-enter only the hold the handle names and
// take any other hold of the owner over as an orphan, so a request must
// never name a hold that another goroutine's request, sent meanwhile, has
// replaced or released. Only the requests are serialised: a blocked Lock
// waits without holding anything.
type Tracker struct {
	// gate keeps the goroutines sharing the handle out of each other's
	// holds (see Enter); every fresh hold keeps it until the hold ends.
	gate *Gate

	// turn holds a value from a request's start until its reply is
	// recorded: a one-slot semaphore, so that waiting for it is bounded by
	// the waiter's context (a request stuck on a dead connection must not
	// hold up another call on the handle for longer than that call allows).
	turn chan struct{}

	mu    sync.Mutex // guards the fields below
	count int64      // hold count as last reported by Redis
	token uint64     // fencing token of the current hold; 0 when none
	arg   any        // the token as a script argument (scripts.TokenArg)
	lease *lease.Lease
	timer *time.Timer   // fires at the end of a fixed lease
	lost  chan struct{} // the current hold's; closed by loss
	keep  Lease         // how the current hold is kept, to watch it again
	end   func(bool)    // the current hold's onLost, as lease.Watchdog.Add takes it
	since time.Time     // when the current hold was taken (a fresh acquire's request sent)
	// maybeEnd is when the current hold may end in Redis because of an
	// Extend whose outcome is unknown (its reply was lost): the hold is
	// reported lost then, unless a later Extend succeeds. bound fires at it.
	maybeEnd time.Time
	bound    *time.Timer
	// renewed is when the current hold was last renewed, taken as a
	// request stops its renewals, so that watching it again keeps its
	// deadline.
	renewed time.Time
	// ending is when the current hold ends, set when a release of it
	// failed: it is no longer renewed, and a timer reports it lost then.
	ending time.Time
	// gone: the last hold was lost (Lost is closed), or ended by the
	// Client's Close, and no fresh hold has been taken since; a release
	// then reports ErrLeaseLost.
	gone bool
	// lostArg is the token, as a script argument, of the last hold lost:
	// what a release after the loss names (see Named).
	lostArg any
	// scoped are the contexts of the current hold (see Context), cancelled
	// when it ends.
	scoped Scopes
	// observe hears the holds' releases and losses, as kind and name.
	observe    obs.Func
	kind, name string
	// notices lists the current hold as held (listed), so that a forced
	// unlock's message ends it at once (see core.Notices); nil: none.
	notices *core.Notices
	held    core.Held
	listed  bool
}

// Observe has the Tracker report its holds' releases and losses to f (nil:
// nobody) as holds of the primitive kind named name. Call it before the
// first acquire.
func (t *Tracker) Observe(f obs.Func, kind, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe, t.kind, t.name = f, kind, name
}

// emitLocked reports the end of the current hold to the observer, if any,
// with err; the caller holds mu.
func (t *Tracker) emitLocked(k obs.Kind, err error) {
	if t.observe != nil && t.count > 0 {
		t.observe.Emit(obs.Event{Kind: k, Primitive: t.kind, Name: t.name, Held: time.Since(t.since), Err: err})
	}
}

// New returns a Tracker holding nothing.
func New() *Tracker {
	return &Tracker{lost: make(chan struct{}), turn: make(chan struct{}, 1), gate: NewGate()}
}

// Enter begins a Lock or TryLock of the handle, before its first request
// (see Gate.Enter): one whose ctx descends from the current hold's Context
// re-enters it; any other waits, in this process, until no hold of the
// handle's is kept, or with block unset finds one kept: wait.ErrBusy. The
// caller calls Exit on the Entry when the acquire ends.
func (t *Tracker) Enter(ctx context.Context, block bool) (Entry, error) {
	t.mu.Lock()
	var held any
	if t.count > 0 {
		held = t.lost
	}
	t.mu.Unlock()
	return t.gate.Enter(ctx, held, block)
}

// take waits for the handle's turn, bounded by ctx; what names the call in
// the error.
func (t *Tracker) take(ctx context.Context) error {
	select {
	case t.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another call on this handle: %w", ctx.Err())
	}
}

// give gives the turn back.
func (t *Tracker) give() { <-t.turn }

// Belief is what the handle holds as a request is sent: the acquire
// scripts re-enter only that hold, and take over any other hold of the
// owner as a fresh one (an orphan, left by an acquire whose reply and undo
// were both lost).
type Belief struct {
	Held  bool
	Token uint64 // the hold's token; 0 when none
	Arg   any    // Token as a script argument (scripts.TokenArg)
}

// Op is one acquire's turn at its Tracker's requests. Each try calls Start
// before sending and Stop unless it acquired; an acquired try keeps the
// turn until its reply is recorded (Took), and the acquire ends with Stop,
// which does nothing when the turn was already given back.
type Op struct {
	t    *Tracker
	held bool
}

// Op returns an acquire's Op, holding no turn yet.
func (t *Tracker) Op() *Op { return &Op{t: t} }

// Start waits for the turn, bounded by ctx, and returns what the handle
// holds now. A wait that ends matches ErrNotAcquired and ctx.Err().
func (o *Op) Start(ctx context.Context) (Belief, error) {
	if err := o.t.take(ctx); err != nil {
		return Belief{}, errs.Both(errs.ErrNotAcquired, err)
	}
	o.held = true
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	if m := o.t.gate.Marked(ctx); m != nil && (o.t.count == 0 || m != o.t.lost) {
		// A re-entry of a hold that ended since it entered: its ctx is
		// done (the hold's end cancels it), or ends now.
		o.Stop()
		if err := ctx.Err(); err != nil {
			return Belief{}, errs.Both(errs.ErrNotAcquired, err)
		}
		return Belief{}, errs.LostAcquire("%s %q: the hold this acquire re-entered has ended", o.t.kind, o.t.name)
	}
	arg := o.t.arg
	if arg == nil {
		arg = scripts.NoToken
	}
	return Belief{Held: o.t.count > 0, Token: o.t.token, Arg: arg}, nil
}

// Stop gives the turn back, if held.
func (o *Op) Stop() {
	if o.held {
		o.held = false
		o.t.give()
	}
}

// Named returns the token, as a script argument, of the hold a release
// drops: the current hold's, or once it was lost the lost one's, so that a
// release never drops a hold granted since to an acquire of the handle
// that waits (a fair lock's grant); scripts.NoToken when the handle has
// held nothing.
func (t *Tracker) Named() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.namedLocked()
}

// LostHold returns the token, as a script argument, of the handle's last
// hold if it holds nothing because that hold was lost; nil otherwise.
func (t *Tracker) LostHold() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 && t.gone {
		return t.lostArg
	}
	return nil
}

// namedLocked is Named; the caller holds mu.
func (t *Tracker) namedLocked() any {
	switch {
	case t.count > 0 && t.arg != nil:
		return t.arg
	case t.count == 0 && t.gone && t.lostArg != nil:
		return t.lostArg
	}
	return scripts.NoToken
}

// Count returns the hold count the handle last saw.
func (t *Tracker) Count() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Token returns the fencing token of the current hold, 0 when none.
func (t *Tracker) Token() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.token
}

// Lost returns the channel of the most recent fresh hold: closed when that
// hold is found gone, left open when it is released.
func (t *Tracker) Lost() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// Lease says how a fresh hold is kept: renewed by w with r (Fixed == 0), or
// expiring after Fixed.
type Lease struct {
	Watchdog *lease.Watchdog
	Renewal  lease.Renewal
	Fixed    time.Duration
	Since    time.Time // taken before the acquire request was sent
	TokenArg any       // the hold's token as a script argument; nil: made from it
	// OnLost, if set, is called when the lease or the timer finds the hold
	// gone, or the Client's Close ends it, after Lost has closed, outside
	// the Tracker's lock.
	OnLost func()
}

// Reentry reports whether an acquire reply of count holds, to a request
// sent with belief b, re-entered the hold b names: the scripts reply a
// count of 1 for a fresh hold (also one taken over from an orphan) and
// more for a re-entry, which only a request naming a hold makes. A
// re-entry changes no lease.
func Reentry(b Belief, count int64) bool { return b.Held && count > 1 }

// Took records a successful acquire reply to a request sent in the
// caller's turn with belief b. A re-entry (see Reentry) counts one more
// hold of the current one, if that is still the hold b names: a hold found
// lost while the request was on its way (its fixed lease's timer, a
// renewal that found it gone) is not taken again by the re-entry, which
// set no lease: Took then fails with an error matching ErrNotAcquired and
// ErrLeaseLost, and the caller gives the re-entry back. A fresh hold
// replaces the current one, which is then lost, and is kept as l says: the
// watchdog watches it (and the Client's Close ends it, see closedLocked),
// or a timer marks it lost when its fixed lease ends. Otherwise it fails
// only when the watchdog is closed.
func (t *Tracker) Took(b Belief, token uint64, count int64, l Lease) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if Reentry(b, count) {
		if t.count == 0 || t.token != b.Token {
			return errs.LostAcquire("%s %q: the hold this acquire re-entered was lost before its reply came", t.kind, t.name)
		}
		t.count = count
		return nil
	}
	if t.count > 0 { // the previous hold is gone: a fresh one replaced it
		t.lostLocked()
	}
	t.dropLocked()
	t.gone = false
	lost := make(chan struct{})
	end := func(closed bool) {
		t.mu.Lock()
		hit := t.lost == lost && t.count > 0
		switch {
		case hit && closed:
			t.closedLocked()
		case hit:
			t.lostLocked()
		}
		t.mu.Unlock()
		if hit && l.OnLost != nil {
			l.OnLost()
		}
	}
	if !t.gate.Keep(!b.Held) {
		// A re-entry that Redis answered with a fresh hold (the one it
		// named was gone) while another call on the handle acquires.
		return errs.LostAcquire("%s %q: the hold this acquire re-entered was gone, and another call on the handle acquires", t.kind, t.name)
	}
	if l.Fixed > 0 {
		// Lost closes when the lease may end in Redis, as the watchdog's do.
		t.timer = time.AfterFunc(l.Fixed-lease.Margin(l.Fixed)-time.Since(l.Since), func() { end(false) })
	} else {
		ls, err := l.Watchdog.Add(l.Renewal, l.Since, end)
		if err != nil {
			t.gate.End()
			return err
		}
		t.lease = ls
	}
	arg := l.TokenArg
	if arg == nil {
		arg = scripts.TokenArg(token)
	}
	t.count, t.token, t.arg, t.lost, t.keep, t.end, t.since = max(count, 1), token, arg, lost, l, end, l.Since
	if t.notices != nil {
		t.notices.Add(t.held, t)
		t.listed = true
	}
	return nil
}

// StartRelease begins a release request in the handle's turn, which
// EndRelease gives back. A handle that holds nothing and has lost nothing
// gets ErrNotHeld without a request (and without the turn). If the request
// drops the last hold, the watchdog stops renewing it first, so that a
// released hold is never renewed. all says whether the release must drop
// every hold of the owner: the handle's hold was lost, and nobody renews
// what Redis may still have of it.
func (t *Tracker) StartRelease(ctx context.Context, what string) (all bool, err error) {
	if err := t.take(ctx); err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 && !t.gone {
		t.give()
		return false, fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what)
	}
	if t.count == 1 && t.lease != nil {
		t.renewed = t.lease.Renewed()
		t.lease.Remove()
		t.lease = nil
	}
	if t.count == 1 { // a hold being released is not lost by its timers
		t.stopTimersLocked()
	}
	return t.count == 0 && t.gone, nil
}

// EndRelease records the reply of the release request StartRelease began
// (see released), or its failure. A release that failed may have been
// applied, or not, and its caller may never retry it (a deferred Unlock):
// a hold that StartRelease stopped renewing is not renewed again, and a
// timer reports it lost when its lease may end in Redis (ending), unless
// a later release or Extend succeeds first. A failed release of a
// re-entry leaves the hold as it was. A hold found lost before the reply
// (Lost closed) is ErrLeaseLost whatever became of the request, which
// could only delete what Redis may still have of it: a request that failed
// leaves that to its lease. A WAIT shortfall (core.Writer) comes with the
// reply: the release stands, and the shortfall is returned. It gives the
// turn back.
func (t *Tracker) EndRelease(n int64, err error, what string) error {
	defer t.give()
	var short error
	if errors.Is(err, errs.ErrNotReplicated) {
		short, err = core.ReleaseErr(err), nil // n says what the release did
	}
	if err != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.count == 0 && t.gone {
			return errs.Lost("%s: the hold was lost before release (deleting what Redis may still have of it failed: %s)",
				what, strings.TrimPrefix(err.Error(), "redcoord: "))
		}
		if t.count > 0 && t.lease == nil && t.keep.Fixed == 0 && t.ending.IsZero() && t.keep.Watchdog != nil {
			t.ending = t.keep.Watchdog.Ends(t.renewed)
		}
		t.watchLocked()
		return err
	}
	if err := t.released(n, what); err != nil {
		return err
	}
	return short
}

// Extend gives the current hold a fixed lease of length, in the handle's
// turn. The watchdog stops renewing the hold first, since a renewal in
// flight could undo a shorter lease; then send sets the lease in Redis and
// reports whether the owner still had the hold. The new lease is counted
// from before send, and the hold ends with a timer at its end, less
// lease.Margin. A hold Redis no longer had is lost: ErrLeaseLost, which
// matches ErrNotHeld too. A send refused with ErrWrongType (the scripts
// check their keys before the first write) leaves the hold kept as it
// was. A send that failed otherwise may have been applied (its reply lost;
// go-redis may have retried it and got another error) and set the lease,
// which no renewal extends (the scripts leave a fixed lease alone): the
// hold is kept as it was, and also lost at that lease's end (maybeEnd)
// unless a later Extend succeeds. A WAIT shortfall leaves the new lease
// standing, and is returned.
func (t *Tracker) Extend(ctx context.Context, what string, length time.Duration, send func() (bool, error)) error {
	if err := t.take(ctx); err != nil {
		return err
	}
	defer t.give()
	t.mu.Lock()
	if t.count == 0 {
		gone := t.gone
		t.mu.Unlock()
		if gone {
			return errs.Lost("%s: the hold was lost before this call", what)
		}
		return fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what)
	}
	// Nothing renews the hold while send is on its way, so the lease it has
	// may end in Redis before send is applied; and send may be applied at
	// once, with a lease shorter than what is left. A timer reports the
	// hold lost at the earlier of the two ends.
	sent := time.Now()
	end, ends := t.deadlineLocked()
	if short := sent.Add(length - lease.Margin(length)); !ends || short.Before(end) {
		end, ends = short, true
	}
	if t.lease != nil {
		t.renewed = t.lease.Renewed()
		t.lease.Remove()
		t.lease = nil
	}
	t.stopTimersLocked()
	if ends {
		t.timer = time.AfterFunc(time.Until(end), t.expiryLocked())
	}
	t.mu.Unlock()
	ok, err := send()
	short := errors.Is(err, errs.ErrNotReplicated)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil && (err != nil && !short) {
		t.timer.Stop() // watchLocked keeps the hold as it was
		t.timer = nil
	}
	switch {
	case err != nil && !short:
		if t.count > 0 && !errors.Is(err, errs.ErrWrongType) {
			// Redis may have applied it: the hold then ends with the new
			// lease, which no renewal extends any more.
			if end := sent.Add(length - lease.Margin(length)); t.maybeEnd.IsZero() || end.Before(t.maybeEnd) {
				t.maybeEnd = end
			}
		}
		t.watchLocked() // as it was, bounded by maybeEnd
		return err
	case !ok:
		if t.count > 0 {
			t.lostLocked()
		}
		return errs.Lost("%s: the hold expired or was deleted before this call", what)
	}
	if t.count == 0 { // a timer found it lost while the request was on its way
		return errs.Lost("%s: the hold was found lost during this call", what)
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.maybeEnd = time.Time{} // this lease replaced any an unknown Extend set
	t.ending = time.Time{}   // and any end a failed release left
	t.keep.Fixed, t.keep.Since = length, sent
	t.timer = time.AfterFunc(length-lease.Margin(length)-time.Since(sent), t.expiryLocked())
	if short {
		return fmt.Errorf("%w; the new lease stands", err)
	}
	return nil
}

// watchLocked keeps the current hold again as it was kept before a
// request stopped that: the watchdog renews it from its last renewal, or a
// timer marks it lost when its fixed lease ends or at ending, if set (a
// release failed); and bound marks it lost at maybeEnd, if set. A hold the
// closed watchdog no longer takes is ended as its Close ends the others.
// The caller holds mu.
func (t *Tracker) watchLocked() {
	if t.count == 0 {
		return
	}
	if !t.maybeEnd.IsZero() && t.bound == nil {
		t.bound = time.AfterFunc(time.Until(t.maybeEnd), t.expiryLocked())
	}
	if t.lease != nil || t.timer != nil {
		return
	}
	if !t.ending.IsZero() {
		t.timer = time.AfterFunc(time.Until(t.ending), t.expiryLocked())
		return
	}
	if t.keep.Fixed > 0 {
		t.timer = time.AfterFunc(t.keep.Fixed-lease.Margin(t.keep.Fixed)-time.Since(t.keep.Since), t.expiryLocked())
		return
	}
	if t.keep.Watchdog == nil {
		return
	}
	ls, err := t.keep.Watchdog.Add(t.keep.Renewal, t.renewed, t.end)
	if err != nil {
		t.closedLocked()
		return
	}
	t.lease = ls
}

// expiryLocked returns what a timer calls when the current hold may be
// gone: its onLost, bound to it, so that a timer left from an earlier hold
// cannot end a later one. The caller holds mu.
func (t *Tracker) expiryLocked() func() {
	end := t.end
	return func() { end(false) }
}

// released records a release reply: the remaining count, or -1 when Redis
// says the owner holds nothing. It returns ErrNotHeld, or ErrLeaseLost (which
// also matches ErrNotHeld) when the handle believed it held the lock.
func (t *Tracker) released(n int64, what string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n >= 0 && t.count == 0 && t.gone {
		// The handle's hold was lost but Redis still had it (a fixed lease
		// whose timer fired just before the server's expiry): it is
		// deleted now, and still reported lost.
		return errs.Lost("%s: the hold was lost before release", what)
	}
	if n >= 0 {
		if n == 0 {
			t.emitLocked(obs.Released, nil)
		}
		t.count = n
		if n == 0 {
			t.scoped.End(func(what string) error { return fmt.Errorf("%w: %s was released", errs.ErrNotHeld, what) })
			t.dropLocked()
		} else {
			t.watchLocked() // Redis counted more holds than the handle did
		}
		return nil
	}
	if t.count > 0 || t.gone {
		t.lostLocked()
		return errs.Lost("%s: the hold expired or was deleted before release", what)
	}
	return fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what)
}

// Forced records that the hold was deleted by force: a loss.
func (t *Tracker) Forced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 {
		t.lostLocked()
	}
}

// Deadline returns when the current hold may be gone from Redis unless
// renewed first, by this process's clock (when its Lost would close); ok
// is false when the handle holds nothing, or its hold is being released.
func (t *Tracker) Deadline() (d time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deadlineLocked()
}

// deadlineLocked is Deadline; the caller holds mu.
func (t *Tracker) deadlineLocked() (d time.Time, ok bool) {
	switch {
	case t.count == 0:
		return time.Time{}, false
	case t.timer != nil && !t.ending.IsZero():
		d, ok = t.ending, true
	case t.lease != nil:
		d, ok = t.lease.Deadline(), true
	case t.timer != nil:
		d, ok = t.keep.Since.Add(t.keep.Fixed-lease.Margin(t.keep.Fixed)), true
	}
	if ok && t.bound != nil && t.maybeEnd.Before(d) {
		d = t.maybeEnd
	}
	return d, ok
}

// LostIf records that a request found the hold of token gone: a loss, if
// that hold is still the handle's current one (a later hold is not).
func (t *Tracker) LostIf(token uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 && t.token == token {
		t.lostLocked()
	}
}

// Context returns a copy of parent that is cancelled when the handle's
// current hold ends: lost (the cause matches ErrLeaseLost), released to
// zero (ErrNotHeld), or no longer kept once the Client is closed
// (ErrClosed), before the call that ended it returns; at once, with
// ErrNotHeld, when the handle holds nothing. what names the hold in the
// cause ("lock \"orders:42\""). An acquire with the context, or one
// derived from it, re-enters the hold (see Enter). The CancelFunc releases
// the context's resources; call it when the work is done.
func (t *Tracker) Context(parent context.Context, what string) (context.Context, context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 {
		return Ended(parent, fmt.Errorf("%w: %s is not held by this handle", errs.ErrNotHeld, what))
	}
	return t.scoped.Add(t.gate.Mark(parent, t.lost), &t.mu, what)
}

// lostLocked marks the current hold lost: it is forgotten, Lost closes,
// and releases report ErrLeaseLost until a fresh hold is taken. The caller
// holds mu, so that a release recording its reply sees either the hold or
// its loss, never a closed Lost with the hold still counted.
func (t *Tracker) lostLocked() {
	t.emitLocked(obs.LeaseLost, nil)
	t.scoped.End(func(what string) error { return fmt.Errorf("%w: %s was lost", errs.ErrLeaseLost, what) })
	t.goneLocked()
}

// closedLocked ends the current hold because the Client was closed: the
// watchdog no longer renews it, so it ends in Redis within a lease, and
// the handle must not count on it from now on. It is forgotten as a lost
// hold is (Lost closes), and its contexts end with ErrClosed. The caller
// holds mu.
func (t *Tracker) closedLocked() {
	t.emitLocked(obs.LeaseLost, errs.ErrClosed)
	t.scoped.End(func(what string) error {
		return fmt.Errorf("%w: %s is no longer kept", errs.ErrClosed, what)
	})
	t.goneLocked()
}

// goneLocked forgets the current hold, closes Lost and has releases report
// ErrLeaseLost (naming the hold's token, see Named) until a fresh hold is
// taken; the caller holds mu.
func (t *Tracker) goneLocked() {
	if t.count > 0 {
		t.lostArg = t.arg
	}
	t.dropLocked()
	select {
	case <-t.lost:
	default:
		close(t.lost)
	}
	t.gone = true
}

// dropLocked forgets the current hold; the caller holds mu.
func (t *Tracker) dropLocked() {
	if t.listed {
		t.notices.Remove(t.held, t)
		t.listed = false
	}
	if t.lease != nil {
		t.lease.Remove()
		t.lease = nil
	}
	t.stopTimersLocked()
	t.maybeEnd, t.ending = time.Time{}, time.Time{}
	t.count, t.token, t.arg = 0, 0, nil
	t.gate.End()
}

// stopTimersLocked stops the fixed lease's timer and bound; the caller
// holds mu.
func (t *Tracker) stopTimersLocked() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.bound != nil {
		t.bound.Stop()
		t.bound = nil
	}
}

// Closed reports whether ch (a Lost channel) is closed, without waiting.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Holder turns a lock's state into the public Holder.
func Holder(st scripts.State) redcoord.Holder {
	m := core.DecodeMeta(st.Meta)
	return redcoord.Holder{
		Owner: st.Owner, Client: m.Client, Host: m.Host, PID: m.PID,
		AcquiredAt: st.AcquiredAt, Lease: m.Lease, Fixed: m.Fixed,
		Remaining: st.Remaining, Count: st.Count, Token: st.Token, Value: m.Value,
	}
}
