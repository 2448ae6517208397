package hold

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	gate Gate

	// turn is full from a request's start until its reply is recorded: a
	// one-slot semaphore, so that waiting for it is bounded by the
	// waiter's context (a request stuck on a dead connection must not hold
	// up another call on the handle for longer than that call allows).
	turn slot // guarded by gate.mu, which no code holds while it waits

	mu    sync.Mutex // guards the fields below
	count int64      // hold count as last reported by Redis
	token uint64     // fencing token of the current hold; 0 when none
	arg   any        // the token as a script argument (scripts.TokenArg)
	// lease is the current hold's lease while the watchdog renews it;
	// kept is the same lease, kept after a request stops its renewals
	// (Remove), to watch it again (lease.Lease.Again); nil: the hold is
	// not the watchdog's.
	lease, kept *lease.Lease
	timer       *time.Timer   // fires at the end of a fixed lease
	fixed       time.Duration // the current hold's fixed lease; 0: none
	// lost is the current hold's; closed by loss. Made when first asked
	// for (Lost, Context; see lostChanLocked), or closedChan when the hold
	// is lost first: nil until then.
	lost  chan struct{}
	since time.Time // when the current hold was taken (a fresh acquire's request sent)
	// rare is what few handles need, made when first needed (see rareLocked).
	rare *rare
	// scoped are the contexts of the current hold (see Context), cancelled
	// when it ends.
	scoped Scopes
	// observe hears the holds' releases and losses, as kind and name.
	observe obs.Func
	// kind and name: with kind "", name is the tag that Names gave.
	kind, name string
	// notices lists the current hold as the hold of owner, a read hold
	// if read (see core.Held), while listed, so that a forced unlock's
	// message ends it at once (see core.Notices); nil: none.
	notices *core.Notices
	owner   string
	// n numbers the fresh holds: the current one's, which a timer that
	// may end it names.
	n            uint32
	read, listed bool
	// unlocking: the release of the current hold's last count was sent,
	// and its Contexts ended then (see StartRelease); until a fresh hold,
	// or a reply that says Redis still counts the hold.
	unlocking bool
	// gone: the last hold was lost (Lost is closed), or ended by the
	// Client's Close, and no fresh hold has been taken since; a release
	// then reports ErrLeaseLost.
	gone bool
}

// held is how notices name the Tracker's holds.
func (t *Tracker) held() core.Held { return core.Held{Owner: t.owner, Read: t.read} }

// Observe has the Tracker report its holds' releases and losses to f (nil:
// nobody) as holds of the primitive kind named name. Call it before the
// first acquire.
func (t *Tracker) Observe(f obs.Func, kind, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe, t.kind, t.name = f, kind, name
}

// Tag has the Tracker name its handle in errors with tag (see errs.Tag,
// errs.TagNames) rather than by the kind and name Observe gives it: a
// handle over several locks' holds, whose Tracker observes nothing. Call
// it, instead of Observe, before the first acquire.
func (t *Tracker) Tag(tag string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kind, t.name = "", tag
}

// whatLocked returns what, the name of a hold in errors, or the Tracker's
// tag (taggedLocked) when it is "": a caller that names its hold by the
// Tracker's kind and name makes no string until an error needs one. The
// caller holds mu.
func (t *Tracker) whatLocked(what string) string {
	if what == "" {
		return t.taggedLocked()
	}
	return what
}

// taggedLocked names the handle in errors; the caller holds mu.
func (t *Tracker) taggedLocked() string {
	if t.kind == "" && t.name != "" {
		return t.name
	}
	return errs.Tag(t.kind, t.name)
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
	return &Tracker{}
}

// Enter begins a Lock or TryLock of the handle, before its first request
// (see Gate.Enter): one whose ctx descends from the current hold's Context
// re-enters it; any other waits, in this process, until no hold of the
// handle's is kept, or with block unset finds one kept: acquire.ErrBusy. The
// caller calls Exit on the Entry when the acquire ends.
func (t *Tracker) Enter(ctx context.Context, block bool) (Entry, error) {
	t.mu.Lock()
	var held any
	if t.count > 0 && t.lost != nil {
		held = t.lost // a Context's mark: none when no Context was made
	}
	t.mu.Unlock()
	return t.gate.Enter(ctx, held, block)
}

// Take waits for the handle's turn, bounded by ctx, for a call that is
// neither an acquire (Op) nor a release (StartRelease), such as a
// compound's Extend; Give gives it back.
func (t *Tracker) Take(ctx context.Context) error { return t.take(ctx) }

// Give gives back the turn that Take took.
func (t *Tracker) Give() { t.give() }

// take waits for the handle's turn, bounded by ctx.
func (t *Tracker) take(ctx context.Context) error {
	if err := t.turn.take(ctx, &t.gate.mu); err != nil {
		return fmt.Errorf("waiting for another call on this handle: %w", err)
	}
	return nil
}

// give gives the turn back.
func (t *Tracker) give() {
	t.gate.mu.Lock()
	defer t.gate.mu.Unlock()
	t.turn.giveLocked()
}

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
	t     *Tracker
	held  bool
	tried bool   // a try was sent, with request id req
	req   string // see Request
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
		return Belief{}, errs.LostAcquire(o.t.taggedLocked(), "the hold this acquire re-entered has ended")
	}
	arg := o.t.arg
	if arg == nil {
		arg = scripts.NoToken
	}
	return Belief{Held: o.t.count > 0, Token: o.t.token, Arg: arg}, nil
}

// Request returns the request id a try of the acquire sends, in the turn
// Start took: req, the id the acquire was given, or, for the first try of
// a re-entry, a fresh one if the handle numbered another request since
// (see Base.Renumber). The tries after the first send what it sent.
func (o *Op) Request(b *Base, req string, reentry bool) string {
	if !o.tried {
		o.tried, o.req = true, req
		if reentry {
			o.req = b.Renumber(req)
		}
	}
	return o.req
}

// Sent returns the request id the acquire's tries sent (see Request); req
// if none was sent.
func (o *Op) Sent(req string) string {
	if o.tried {
		return o.req
	}
	return req
}

// Stop gives the turn back, if held.
func (o *Op) Stop() {
	if o.held {
		o.held = false
		o.t.give()
	}
}

// ReleaseArg returns the token, as a script argument, of the hold a release
// drops: the current hold's, or once it was lost the lost one's, so that a
// release never drops a hold granted since to an acquire of the handle
// that waits (a fair lock's grant); scripts.NoToken when the handle has
// held nothing.
func (t *Tracker) ReleaseArg() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releaseArgLocked()
}

// LostHold returns the token, as a script argument, of the handle's last
// hold if it holds nothing because that hold was lost; nil otherwise.
func (t *Tracker) LostHold() any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 && t.gone {
		return t.ends().lostArg
	}
	return nil
}

// releaseArgLocked is ReleaseArg; the caller holds mu.
func (t *Tracker) releaseArgLocked() any {
	switch {
	case t.count > 0 && t.arg != nil:
		return t.arg
	case t.count == 0 && t.gone && t.ends().lostArg != nil:
		return t.rare.lostArg
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
	return t.lostChanLocked()
}

// lostChanLocked returns lost, made first if nobody asked for it since the
// current hold was taken (or, when none was, yet): a channel that only a
// loss closes, as every hold's. The caller holds mu.
func (t *Tracker) lostChanLocked() chan struct{} {
	if t.lost == nil {
		t.lost = make(chan struct{})
	}
	return t.lost
}

// Context returns a copy of parent that is cancelled when the handle's
// current hold ends: lost (the cause matches ErrLeaseLost), released to
// zero (ErrNotHeld: when that release is sent, before Redis can give the
// name to another), or no longer kept once the Client is closed
// (ErrClosed), before the call that ended it returns; at once, with
// ErrNotHeld, when the handle holds nothing. what names the hold in the
// cause (`rlock "orders:42"`). An acquire with the context, or one
// derived from it, re-enters the hold (see Enter). The CancelFunc releases
// the context's resources; call it when the work is done.
func (t *Tracker) Context(parent context.Context, what string) (context.Context, context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 || t.unlocking {
		return Ended(parent, errs.Of(what, errs.ErrNotHeld, "not held by this handle"))
	}
	return t.scoped.Add(t.gate.Mark(parent, t.lostChanLocked()), &t.mu, what)
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
