package relection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/hold"
	"github.com/redcoord/redcoord/internal/scripts"
)

const kind = "relection"

// MaxValueLen is the longest value a candidate may campaign with or a
// leader proclaim, in bytes.
const MaxValueLen = 64 << 10

// ErrResigned is what the cause of a leader's Context after Resign
// matches (errors.Is); the cause names the election. It matches
// redcoord.ErrNotHeld.
var ErrResigned error = errs.New(errs.ErrNotHeld, "resigned")

// Leader is who leads an election: the value it campaigned with or
// proclaimed last, its term and when the term began. Observe sends one
// with Term 0 when nobody leads.
type Leader struct {
	Value string
	// Term is the leader's fencing token: terms strictly increase across
	// the leaders of a name, so a store that refuses a write with a term
	// lower than the highest it has seen refuses a deposed leader's.
	Term  uint64
	Since time.Time // when the term began, by the Redis server's clock
}

// Election is a handle on a leader election named in Redis. The handle is
// the candidate: Campaign queues it, and while it leads, Token, Lost and
// Context tell its term and its end. It is safe for concurrent use; give
// each candidate its own handle. An Election must not be copied after
// first use.
type Election struct {
	_ noCopy

	h    *hold.Handle
	fair scripts.Fair // h.Lock, the queue's keys and the log; zero when h.Err is set
	q    hold.Fair

	// turn serialises Campaign, Proclaim and Resign, bounded by their
	// contexts: a handle leads with one hold, never re-entered.
	turn chan struct{}

	mu   sync.Mutex
	term *term // the current or last term of this handle; nil before the first
}

// New returns a handle on the election named name. It does no I/O; a bad
// name or option is reported by every method of the handle, as
// ErrInvalidArgument.
func New(c *redcoord.Client, name string, opts ...Option) *Election {
	// The queue's keys are the election's own: a fair lock's queue of the
	// same name must never be granted an election.
	h, keys := hold.NewHandle(c, name, kind, opts, core.KeyElectQueue, core.KeyElectAlive, core.KeyElectWaiting,
		core.KeyElectLog, core.ChanNameClient)
	e := &Election{h: h, turn: make(chan struct{}, 1)}
	if h.Err == nil {
		e.fair = scripts.NewFair(&h.Lock, keys[0], keys[1], keys[2], keys[3])
		e.q = hold.Fair{H: h, Lock: e.fair, Ch: keys[4]}
	}
	return e
}

// Name returns the election's name.
func (e *Election) Name() string { return e.h.Name }

// Campaign blocks until this handle leads the election, saying value (an
// address, a worker's name), or ctx is done. Candidates are served in the
// order they first asked, across processes; a leader's Resign hands the
// lead to the longest-waiting live candidate at once, and a leader that
// dies is replaced when its lease runs out (the Client's lease TTL after
// its last renewal). While it leads, the Client's watchdog renews the
// lease; Lost closes if it is lost.
//
// A Campaign that ends with ctx returns an error matching
// redcoord.ErrNotAcquired and ctx.Err(), and leaves the queue (a lead
// granted meanwhile is passed on, or, with no candidate to follow, ended:
// observers see it end); only its leave marker stays, a minute, so that a
// late copy of its request is refused. Campaign on a handle that leads
// proclaims value and returns (if it finds that the term has ended, it
// campaigns afresh); a Campaign while another of the same handle
// waits waits for it first.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := e.h.CheckAcquire(ctx); err != nil {
		return e.named(err)
	}
	if err := checkValue(value); err != nil {
		return e.named(err)
	}
	if err := e.take(ctx); err != nil {
		return e.named(errs.Both(errs.ErrNotAcquired, err))
	}
	defer e.give()
	if token := e.h.Hold.Token(); token != 0 {
		// It leads: it proclaims, unless its term ended meanwhile (then
		// it campaigns afresh).
		if err := e.proclaim(ctx, token, value); !errors.Is(err, errs.ErrLeaseLost) {
			return e.named(err)
		}
	}
	l := scripts.NewLeaseArg(e.h.TTL(), []byte(value))
	if err := e.q.AcquireInTurn(ctx, l, 0, true); err != nil {
		return e.named(err)
	}
	t := newTerm(e.h.Hold.Token())
	e.mu.Lock()
	e.term = t
	e.mu.Unlock()
	go t.watch(e.h.Hold.Lost(), e.h.S.Wait(0).Done, e.h.S.Err, e.h.Name)
	return nil
}

// Resign steps down: the longest-waiting live candidate leads at once, in
// the same script, without waiting for a lease to run out; with no
// candidate nobody leads. Contexts from Context are cancelled with the
// cause ErrResigned. A handle that does not lead gets ErrNotHeld, and one
// whose lead was lost (Lost is closed) ErrLeaseLost, which matches
// ErrNotHeld too, at once, even while a Campaign of the handle waits
// (Resign does not end it: cancel its context). Resign ends only the term
// the handle led in when it was called: a lead that a waiting Campaign of
// the handle is granted meanwhile is that Campaign's, and Resign then
// reports the earlier term lost. A Resign that go-redis retries after a
// lost reply is applied once. A done ctx does not stop Resign, and one
// that fails leaves the lead to end with its lease: see "Releases" in
// package redcoord.
func (e *Election) Resign(ctx context.Context) error {
	if err := e.h.CheckRelease(); err != nil {
		return e.named(err)
	}
	ctx, cancel := e.h.S.ReleaseContext(ctx)
	defer cancel()
	// A Resign ends the term it finds (token), never a later one: a
	// Campaign of this handle that waits may be granted the lead at any
	// moment, and resigning that would leave it leading in its own eyes
	// while the script hands the lead on.
	token := e.h.Hold.Token()
	if token == 0 {
		// Not leading: report it (or a loss) now, not after a Campaign
		// of this handle that waits.
		if e.h.Hold.LostHold() == nil {
			return e.named(e.notLed())
		}
		return e.named(e.h.ReleaseLost(ctx, "", 0, e.q.ReleaseNamed))
	}
	if err := e.take(ctx); err != nil {
		return e.named(err)
	}
	defer e.give()
	if e.h.Hold.Token() != token { // lost while this call waited for its turn
		return e.named(e.h.ReleaseLost(ctx, "", token, e.q.ReleaseNamed))
	}
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t != nil && t.token == token && !hold.Closed(e.h.Hold.Lost()) {
		// The term ends as the release is sent: Redis may hand the lead
		// on before the reply comes back, or the reply may never come.
		t.end(e.named(ErrResigned))
	}
	err := e.h.UnlockOn(ctx, e.h.Hold, "", hold.Release(e.releaseAll))
	if t != nil && e.h.Hold.Token() != t.token {
		if hold.Closed(e.h.Hold.Lost()) {
			t.end(lostCause(e.h.Name))
		} else {
			t.end(e.named(ErrResigned))
		}
	}
	return e.named(err)
}

// releaseAll releases the handle's hold at once, every re-entry of it
// (it leads with one).
func (e *Election) releaseAll(ctx context.Context, rdb redis.Scripter, req string, _ bool) (int64, error) {
	return e.q.ReleaseNamed(ctx, rdb, req, e.h.Hold.ReleaseArg())
}

// Proclaim says a new value as the leader, without a new term: observers
// receive it as a change, and Leader reports it. A handle that does not
// lead gets ErrNotHeld; one whose term ended meanwhile (its lease ran out)
// gets ErrLeaseLost, and Lost closes. Proclaiming the value the leader
// already says changes nothing.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if err := e.h.Check(ctx); err != nil {
		return e.named(err)
	}
	if err := checkValue(value); err != nil {
		return e.named(err)
	}
	if e.h.Hold.Token() == 0 { // now, not after a Campaign of this handle that waits
		return e.named(e.notLed())
	}
	if err := e.take(ctx); err != nil {
		return e.named(err)
	}
	defer e.give()
	token := e.h.Hold.Token()
	if token == 0 {
		return e.named(e.notLed())
	}
	return e.named(e.proclaim(ctx, token, value))
}

// proclaim is Proclaim of the term token in the handle's turn.
func (e *Election) proclaim(ctx context.Context, token uint64, value string) error {
	ok, err := e.fair.Proclaim(ctx, e.h.S.Writer(), e.h.NextRequest(), scripts.TokenArg(token), value)
	if errors.Is(err, errs.ErrNotReplicated) && ok {
		return errs.Noted(err, "the value stands on the primary")
	}
	if err != nil {
		return err
	}
	if !ok {
		e.h.Hold.LostIf(token)
		return errs.Lost(errs.Tag(kind, e.h.Name), "the term ended before this call")
	}
	return nil
}

// Leader returns who leads the election; ok is false when nobody does (no
// candidate, or a leader whose lease ran out with nobody to follow it).
func (e *Election) Leader(ctx context.Context) (l Leader, ok bool, err error) {
	if err := e.h.Check(ctx); err != nil {
		return Leader{}, false, e.named(err)
	}
	t, err := e.fair.Leader(ctx, e.h.S.RDB)
	if err != nil || t.Term == 0 {
		return Leader{}, false, e.named(err)
	}
	return leaderOf(t), true, nil
}

// Token returns the term of this handle's leadership, 0 when it does not
// lead. Pass it to a store that refuses writes with a lower token than the
// highest it has seen: a leader paused past its lease cannot then
// overwrite its successor's work. After the Client is closed, Token and
// Lost stay as they were (the lead lapses with its lease); Context is
// cancelled then.
func (e *Election) Token() uint64 { return e.h.Hold.Token() }

// Lost returns a channel that is closed when this handle's latest
// leadership is found lost: its lease ran out (the watchdog could not renew
// it in time) or its term ended otherwise, the Client's Close included. It
// stays open after Resign.
// Take it after Campaign returns; before the first lead it never closes.
func (e *Election) Lost() <-chan struct{} { return e.h.Hold.Lost() }

// Context returns a copy of parent that is cancelled when this handle
// stops leading in its current term: with the cause ErrLeaseLost when the
// lead is lost, ErrResigned by the Resign that ends it (as it sends the
// release, before Redis may hand the lead on), ErrClosed when the Client
// closes (before Close returns; the lead then lapses with its lease). If
// the handle does not lead, the context is cancelled at once with the cause
// ErrNotHeld. Run the leader's work under it, so that the work stops with
// the lead; call the CancelFunc when the work is done.
func (e *Election) Context(parent context.Context) (context.Context, context.CancelFunc) {
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t == nil || e.h.Hold.Token() != t.token {
		return hold.Ended(parent, e.named(e.notLed()))
	}
	return t.context(parent, e.h.Name)
}

// take waits for the handle's turn, bounded by ctx.
func (e *Election) take(ctx context.Context) error {
	select {
	case e.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another call on this handle: %w", ctx.Err())
	}
}

func (e *Election) give() { <-e.turn }

// notLed is the error of a call that needs the lead, on a handle that
// does not lead.
func (e *Election) notLed() error {
	return errs.New(errs.ErrNotHeld, "not led by this handle")
}

// named names the election in err, after the sentinel's words (see
// errs.About).
func (e *Election) named(err error) error { return errs.About(kind, e.h.Name, err) }

// checkValue checks a value to campaign with or proclaim.
func checkValue(v string) error {
	switch {
	case v == "":
		return errs.Invalid("value", "must not be empty")
	case len(v) > MaxValueLen:
		return errs.Invalid("value", "must be at most %d bytes, got %d", MaxValueLen, len(v))
	}
	return nil
}

// leaderOf turns a term the scripts read into the public Leader.
func leaderOf(t scripts.Term) Leader {
	return Leader{Value: t.Value, Term: t.Term, Since: t.Since}
}

// noCopy lets go vet's copylocks check report copies of an Election.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
