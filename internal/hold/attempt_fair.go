package hold

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/acquire"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Fair makes the acquires of one handle on a fair lock, rfairlock's Mutex
// or relection's Election (a fair lock whose holder leads): one try takes
// the lock, re-enters it or joins the queue; a release hands the lock to
// the queue's head, whose wait is woken by the grant.
type Fair struct {
	H    *Handle
	Lock scripts.Fair // H.Lock and the queue's keys
	Ch   string       // the Client's channel for the name, where grants to its waiters arrive
}

// unforced reports whether no call ends a grant before its grantee has
// seen it, other than its lease running out: an election's (its Lock has
// a Log), which has no ForceUnlock, and whose holds only the handle that
// knows their token releases. A grant message read in time is then the
// hold itself (see confirm).
func (f *Fair) unforced() bool { return f.Lock.Log() != "" }

// Acquire takes the lock for a handle that holds no turn of its own
// (rfairlock): see Handle.Acquire.
func (f *Fair) Acquire(ctx context.Context, fixed time.Duration, block bool) error {
	return f.H.Acquire(ctx, &fairAttempt{f: f, fixed: fixed > 0}, fixed, block)
}

// AcquireInTurn takes the lock with the lease argument l for a caller that
// holds its own turn (relection's Campaign): see Handle.AcquireInTurn.
func (f *Fair) AcquireInTurn(ctx context.Context, l scripts.LeaseArg, fixed time.Duration, block bool) error {
	return f.H.AcquireInTurn(ctx, &fairAttempt{f: f, fixed: fixed > 0}, l, fixed, block)
}

// Release is the handle's release script (a Release, for Handle.Unlock):
// it drops one hold of the handle's, every one if all, naming the hold by
// its token (Tracker.ReleaseArg), so that a hold granted since to an acquire of
// the handle that waits is not dropped.
func (f *Fair) Release(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error) {
	return f.Lock.Release(ctx, rdb, req, all, f.H.Hold.ReleaseArg())
}

// ReleaseNamed is the handle's release of the hold of token named (a
// ReleaseNamed, for Handle.ReleaseLost): it drops every hold of it.
func (f *Fair) ReleaseNamed(ctx context.Context, rdb redis.Scripter, req string, named any) (int64, error) {
	return f.Lock.Release(ctx, rdb, req, true, named)
}

// fairAttempt is one acquire's tries, and the undo of its request (a
// Kind): one try takes the lock, re-enters it or joins the queue; a
// blocking acquire's queue entry is kept alive by its Attempt's heartbeat.
type fairAttempt struct {
	Attempt
	f     *Fair
	fixed bool      // a fixed lease, not renewed by the watchdog
	sent  time.Time // when the last try that did not acquire was sent,
	at    int64     // and the server's clock (ms) when it ran
}

// Wakes says that a grant is a message targeted at the request.
func (a *fairAttempt) Wakes() Wakes { return Wakes{Mode: acquire.Targeted, Channel: a.f.Ch} }

// Try makes one attempt in the handle's turn, which an acquiring try keeps
// until the hold is recorded. It returns what an acquiring try got: the
// hold, and no later than when it was taken, by the local clock.
func (a *fairAttempt) Try(ctx context.Context, w acquire.Wake) (got Got, att acquire.Attempt, err error) {
	f, h := a.f, a.H
	held, err := a.Op.Start(ctx)
	if err != nil {
		return got, acquire.Attempt{}, err
	}
	defer func() {
		if err != nil || !att.Acquired {
			a.Op.Stop()
		}
	}()
	if token, grantedAt, ok := scripts.ParseGrant(w.Payload); ok {
		// A release script made req the holder after the last try ran;
		// the grant may have ended since (see confirm).
		since, ok, err := a.confirm(ctx, token, grantedAt, w.Sub)
		if err != nil {
			return got, acquire.Attempt{}, err
		}
		if ok {
			got = Got{Acquired: scripts.Acquired{OK: true, Token: token, Count: 1}, Since: since, Held: held}
			return got, acquire.Attempt{Acquired: true}, nil
		}
		// The grant is gone already: try.
	}
	a.Req = a.Op.Request(&h.Base, a.Req, held.Held)
	now := time.Now()
	r, err := f.Lock.Acquire(ctx, h.S.Writer(), a.Req, held.Arg, a.Lease, a.Block, h.TTL())
	// With WithWaitReplicas, a hold that a release granted to this request,
	// or that this request took before, its reply lost, is one this try
	// wrote nothing for: the Writer's WAIT covers it all the same (see
	// core.Session.Writer), and a shortfall is undone by Leave.
	if err = core.AcquireErr(r.OK, err); err != nil {
		return got, acquire.Attempt{}, err
	}
	if r.OK {
		// A grant found by a re-check is r.Age old.
		return Got{Acquired: r.Acquired, Since: now.Add(-r.Age), Held: held}, acquire.Attempt{Acquired: true}, nil
	}
	a.sent, a.at = now, r.Now
	if err := a.Wait(now, a.heartbeat); err != nil {
		return got, acquire.Attempt{}, err
	}
	return got, acquire.Attempt{Hint: r.Wait}, nil
}

// confirm reports whether the grant of token that a release made to req
// at server time grantedAt, announced by a message, still stands, and when
// its lease is to be counted from. A message is a hint: it says that the
// grant was made, not that it still stands, and it may be read after
// ForceUnlock or a release by a call on this handle that named an earlier
// hold ended the grant and handed the lock on; taking it as the hold would
// make two holders. So the grantee asks Redis, in one round trip: a grant
// renewed by the watchdog is confirmed by the watchdog's renewal of it
// (lock_renew: the owner holds it with that token), whose lease is counted
// from then; a fixed lease, which a renewal would change, by a touch of
// its token (the token names one hold: tokens never repeat), its lease
// dated from the grant. Both are sent on the Writer, so with
// WithWaitReplicas the replicas have the grant once it is confirmed.
//
// A grant message needs no round trip without WithWaitReplicas when
// nothing can have ended the grant unheard. An election's grant ends only
// with its lease. A fair lock's may end by ForceUnlock too, whose notice
// this Client hears on its own channel: the grant stands unless a notice
// named it, if that channel was subscribed before the grant arrived, on
// the same connection (core.Notices.Told), since a force's notice is
// published after the grant and arrives after it. (A notice that arrives
// after this check, before or after the hold is recorded, ends the hold
// as it ends every hold forced: Lost closes.) Then a grant made no earlier
// than the last try ran (grantedAt, by the server's clock in ms) stands
// for its lease. (One made before that try, in the same millisecond,
// either stood then, and the try took it, or had ended, which takes a
// whole lease.) Its lease is dated from the earliest local time the grant
// can have been made: dated, less the millisecond the server's clock
// truncates, and no earlier than the try was sent; the watchdog's
// renewals verify it from then on, the first within a tick (a third of
// the lease). A grant read later than a tick after it was made (the
// message was delayed), an older grant, a fixed lease, replicas to wait
// for, or a Client that may not hear a force (Cluster, a channel not yet
// subscribed or resubscribed after the grant), take the round trip.
func (a *fairAttempt) confirm(ctx context.Context, token uint64,
	grantedAt int64, sub *hub.Subscription) (since time.Time, ok bool, err error) {
	h := a.H
	arg := scripts.TokenArg(token)
	sent := time.Now()
	heard := a.f.unforced() || h.S.Notices.Told(sub, h.Owner, token)
	if heard && !a.fixed && grantedAt >= a.at && h.S.Config.Replicas.N == 0 {
		since = dated(a.sent, a.at, grantedAt).Add(-time.Millisecond)
		if since.Before(a.sent) {
			since = a.sent
		}
		if time.Since(since) < h.TTL()/3 {
			return since, true, nil
		}
	}
	if a.fixed {
		since = dated(a.sent, a.at, grantedAt)
		ok, err = scripts.Touch(ctx, h.S.Writer(), a.f.Lock.Hash, "t", strconv.FormatUint(token, 10))
	} else {
		since = sent
		script, keys, args := h.Lock.Renewal(h.TTL(), arg)
		cmd := scripts.RunBySHA(ctx, h.S.Writer(), script, keys, args...)
		n, _ := cmd.Val().(int64) // kept with a WAIT shortfall's error
		ok, err = n == 1, cmd.Err()
	}
	if err = core.AcquireErr(ok, err); err != nil || !ok {
		return since, false, err
	}
	return since, true, nil
}

// Leave leaves the queue, or gives back what the request took or was
// granted.
func (a *fairAttempt) Leave(ctx context.Context) error {
	a.StopWaiting()
	_, err := a.f.Lock.Leave(ctx, a.H.S.RDB, a.Req)
	return err
}

// heartbeat is the renewal of the request's queue entry.
func (a *fairAttempt) heartbeat() lease.Renewal {
	script, keys, args := a.f.Lock.Heartbeat(a.Req, a.H.TTL())
	return lease.Renewal{Script: script, Keys: keys, Args: args}
}

// dated returns the earliest local time at which a grant made at server
// time grantedAt can have happened, given that a try sent at sent ran at
// server time tryAt; the grant's lease runs from then. Dating it from sent
// alone would be safe too, but a waiter re-checks only every poll interval
// (or less often, up to the blocker's lease), and a fixed lease dated that
// early could be reported lost at once. Should the server's clock step,
// the result stays between sent and now.
func dated(sent time.Time, tryAt, grantedAt int64) time.Time {
	if grantedAt <= tryAt {
		return sent
	}
	t := sent.Add(time.Duration(grantedAt-tryAt) * time.Millisecond)
	if now := time.Now(); now.Before(t) {
		return now
	}
	return t
}
