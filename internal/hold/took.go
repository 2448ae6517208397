package hold

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Got is what an acquiring try got: Redis's reply, when its request was
// sent (no later than the lease began), and what the handle held then.
type Got struct {
	scripts.Acquired
	Since time.Time
	Held  Belief // the belief the request was sent with (Op.Start)
}

// Leaver undoes an acquire request that Redis may have applied.
type Leaver interface {
	Leave(ctx context.Context) error
}

// Took records a successful acquire, as Tracker.Took, with the watchdog
// renewing the lock hash (fixed == 0) or a timer ending it. If that fails
// (the Client closed meanwhile) it gives the hold back with undo.
func (h *Handle) Took(ctx context.Context, got Got, fixed time.Duration, undo Leaver) error {
	arg := scripts.TokenArg(got.Token)
	script, keys, args := h.Lock.RenewalShared(h.TTL())
	return h.tookOn(ctx, h.Hold, lease.Renewal{Script: script, Keys: keys, Args: args, Last: arg}, arg, got, fixed, undo)
}

// TookOn is Took for a hold tracked by t and renewed by r: a read-write
// lock's read holds have a Tracker and a renewal of their own, and a name
// of their own, arg (scripts.ReadName), which r sends last. A fresh hold
// whose reply came late is confirmed first (see Confirm); a re-entry keeps
// the lease it found, and fails if the hold it re-entered was lost
// meanwhile (see Tracker.Took).
func (h *Handle) TookOn(ctx context.Context, t *Tracker, r lease.Renewal, arg any, got Got, fixed time.Duration,
	undo Leaver) error {
	r.Last = arg
	return h.tookOn(ctx, t, r, arg, got, fixed, undo)
}

// tookOn is TookOn with the hold's token as a script argument, nil to make
// it from got.Token.
func (h *Handle) tookOn(ctx context.Context, t *Tracker, r lease.Renewal, arg any, got Got, fixed time.Duration,
	undo Leaver) error {
	since := got.Since
	var err error
	if !Reentry(got.Held, got.Count) {
		length := fixed
		if fixed == 0 {
			length = h.TTL()
		}
		since, err = Confirm(ctx, h.S.Writer(), r, since, length, fixed > 0)
	}
	if err == nil {
		err = t.Took(got.Held, got.Token, got.Count,
			Upkeep{Watchdog: h.S.Watchdog, Renewal: r, Fixed: fixed, Since: since, TokenArg: arg})
	}
	if err != nil {
		// Bounded as a failed wait's leave is: the caller's ctx may be
		// done, and a stuck connection must not hold the call for ever.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acquire.LeaveTimeout)
		_ = undo.Leave(lctx)
		cancel()
	}
	return err
}

// Confirm returns when the lease of a successful acquire sent at since is
// to be counted from. A hold's lease is counted from when its request was
// sent, the latest moment Redis can have set it by the holder's clock; a
// reply that arrives after that lease could have ended (Redis stalled
// between the request and its reply: paused, swapping, a long script)
// would leave a hold reported lost as soon as it is taken, while Redis
// keeps it for a whole lease from when it ran the script. So a late hold
// renewed by the watchdog is confirmed by one renewal at once, r, and
// counted from when that was sent. A late fixed lease cannot be renewed
// without changing it: it is an error, as is a confirmation that fails or
// is late too; the caller then gives the hold back with its leave script.
// rdb is the acquire's Writer: with WithWaitReplicas, a confirming renewal
// that too few replicas acknowledged fails the confirmation too, as the
// acquire's own shortfall would have (see core.Writer).
func Confirm(ctx context.Context, rdb redis.Scripter, r lease.Renewal, since time.Time, length time.Duration,
	fixed bool) (time.Time, error) {
	life := length - lease.Margin(length)
	took := time.Since(since)
	if took < life {
		return since, nil
	}
	if fixed {
		return since, errs.New(errs.ErrNotAcquired, "Redis answered %v after the request, "+
			"when the fixed lease of %v may have ended: the hold was given back",
			took.Round(time.Millisecond), length)
	}
	sent := time.Now()
	n, err := scripts.RunBySHA(ctx, rdb, r.Script, r.Keys, r.Arguments()...).Int64()
	if err == nil && n != 1 {
		err = errs.ErrLeaseLost
	}
	if err == nil && time.Since(sent) >= life {
		err = fmt.Errorf("its renewal was answered %v after it was sent", time.Since(sent).Round(time.Millisecond))
	}
	if err != nil {
		return since, &errs.Error{Sentinel: errs.ErrNotAcquired, Cause: err,
			Detail: fmt.Sprintf("Redis answered %v after the request, "+
				"when the lease of %v may have ended, and the hold could not be confirmed",
				took.Round(time.Millisecond), length)}
	}
	return sent, nil
}

// Upkeep says how a fresh hold is kept: renewed by Watchdog with Renewal
// (Fixed == 0), or expiring after Fixed. With neither, the caller keeps it
// and reports its end with EndIf: a compound hold (MultiMutex, RedLock),
// which its parts' holds keep.
type Upkeep struct {
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

// LeaseEnded is told by the watchdog that the lease l it renewed was found
// gone (closed false), or that the Client's Close ended it: the current
// hold's lease, if l is its (see lease.Holder).
func (t *Tracker) LeaseEnded(l *lease.Lease, closed bool) {
	t.mu.Lock()
	t.ended(t.kept == l && t.count > 0, closed)
}

// endIf ends the hold numbered n (Tracker.n), if it is still the current
// one, for a timer that found its lease ended.
func (t *Tracker) endIf(n uint32, closed bool) {
	t.mu.Lock()
	t.ended(t.n == n && t.count > 0, closed)
}

// ended ends the current hold if hit says it is the one that ended: lost,
// or with closed no longer kept (see closedLocked); then it calls the
// hold's OnLost, if any. The caller holds mu, which ended unlocks before
// OnLost runs.
func (t *Tracker) ended(hit, closed bool) {
	switch {
	case hit && closed:
		t.closedLocked()
	case hit:
		t.lostLocked()
	}
	onLost := t.onLostLocked()
	t.mu.Unlock()
	if hit && onLost != nil {
		onLost()
	}
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
// a timer marks it lost when its fixed lease ends, or the caller reports
// its end (EndIf). Otherwise it fails only when the watchdog is closed.
func (t *Tracker) Took(b Belief, token uint64, count int64, l Upkeep) error {
	t.mu.Lock()
	forced, err := t.tookLocked(b, token, count, l)
	if !forced {
		t.mu.Unlock()
		return err
	}
	// A force's notice came before the hold was recorded: no acquire
	// reports a hold that is gone already.
	err = errs.LostAcquire(t.taggedLocked(), "a ForceUnlock ended the grant before the acquire returned")
	t.forcedUnlock()
	return err
}

// tookLocked is Took with mu held; forced says that the fresh hold it
// recorded was forced already (see core.Notices.Add).
func (t *Tracker) tookLocked(b Belief, token uint64, count int64, l Upkeep) (forced bool, err error) {
	if Reentry(b, count) {
		if t.count == 0 || t.token != b.Token {
			return false, errs.LostAcquire(t.taggedLocked(), "the hold this acquire re-entered was lost before its reply came")
		}
		// Not Redis's count, which may hold re-entries whose callers were
		// told they failed: the handle's last release drops those.
		t.count++
		return false, nil
	}
	if t.count > 0 { // the previous hold is gone: a fresh one replaced it
		t.lostLocked()
	}
	t.dropLocked()
	t.gone = false
	if !t.gate.Claim(!b.Held) {
		// A re-entry that Redis answered with a fresh hold (the one it
		// named was gone) while another call on the handle acquires.
		return false, errs.LostAcquire(t.taggedLocked(),
			"the hold this acquire re-entered was gone, and another call on the handle acquires")
	}
	t.n++
	if l.Fixed > 0 {
		// Lost closes when the lease may end in Redis, as the watchdog's do.
		n := t.n
		t.timer = time.AfterFunc(l.Fixed-lease.Margin(l.Fixed)-time.Since(l.Since), func() { t.endIf(n, false) })
	} else if l.Watchdog != nil {
		ls, err := l.Watchdog.Watch(l.Renewal, l.Since, t)
		if err != nil {
			t.gate.End()
			return false, err
		}
		t.lease, t.kept = ls, ls
	}
	arg := l.TokenArg
	if arg == nil {
		arg = scripts.TokenArg(token)
	}
	t.count, t.token, t.arg, t.lost, t.fixed, t.since = max(count, 1), token, arg, nil, l.Fixed, l.Since
	if l.OnLost != nil || t.rare != nil {
		t.rareLocked().onLost = l.OnLost
	}
	if t.notices != nil {
		forced = t.notices.Add(t.held(), t, token)
		t.listed = true
	}
	return forced, nil
}
