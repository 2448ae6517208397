package hold

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// A Releaser sends a release script: it drops one hold of the owner
// (every hold if all) with request id req and returns the remaining count
// (-1: not held). A handle that is one sends its release with no func
// value made for it.
type Releaser interface {
	Release(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error)
}

// Release is a Releaser that is a func.
type Release func(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error)

// Release calls f.
func (f Release) Release(ctx context.Context, rdb redis.Scripter, req string, all bool) (int64, error) {
	return f(ctx, rdb, req, all)
}

// Unlock releases one hold with release, and reports ErrNotHeld or
// ErrLeaseLost as Tracker.Released.
func (h *Handle) Unlock(ctx context.Context, release Releaser) error {
	return h.UnlockOn(ctx, h.Hold, "", release)
}

// UnlockOn is Unlock for a hold tracked by t; what names the hold in errors
// after the lock (see Named): "read lock", or "" for the lock itself. The
// release is sent on the Session's ReleaseContext, even when ctx is done;
// one that fails leaves the hold to end with its lease, as EndRelease says.
func (h *Handle) UnlockOn(ctx context.Context, t *Tracker, what string, release Releaser) error {
	if err := h.CheckRelease(); err != nil {
		return err
	}
	ctx, cancel := h.S.ReleaseContext(ctx)
	defer cancel()
	if what != "" {
		what = h.Named(what)
	}
	all, err := t.StartRelease(ctx, what) // "": t names the lock itself
	if err != nil {
		return err
	}
	n, err := release.Release(ctx, h.S.Writer(), h.NextRequest(), all)
	return t.EndRelease(n, err, what)
}

// ReleaseNamed is a release script that drops only the hold of the owner
// whose token is named (a script argument), every hold of it at once, with
// request id req; it returns the remaining count (-1: not held).
type ReleaseNamed func(ctx context.Context, rdb redis.Scripter, req string, named any) (int64, error)

// ReleaseLost is the release of a call that must not drop the handle's
// current hold: the call found the handle holding nothing (token is 0), or
// the hold of token it named was lost while the call waited for its turn,
// and the handle may hold another since (a fair lock's grant to an acquire
// of the handle that waits). It does not take the handle's turn. When the
// hold was lost, release deletes what Redis may still have of it, named by
// its token (a later hold has another), and the error matches ErrLeaseLost;
// a handle that held nothing and lost nothing gets ErrNotHeld, without a
// request. what names the hold in errors as UnlockOn's does.
func (h *Handle) ReleaseLost(ctx context.Context, what string, token uint64, release ReleaseNamed) error {
	if err := h.Check(ctx); err != nil {
		return err
	}
	what = h.Named(what)
	named := h.Hold.LostHold()
	if token != 0 {
		named = scripts.TokenArg(token)
	}
	if named == nil {
		return errs.Of(what, errs.ErrNotHeld, "not held by this handle")
	}
	if _, err := release(ctx, h.S.Writer(), h.NextRequest(), named); err != nil && !errors.Is(err, errs.ErrNotReplicated) {
		// What Redis may still have of the lost hold is left to its lease.
		return errs.Lost(what, "the hold was lost before this call (deleting what Redis may still have of it failed: %s)",
			errs.Words(err))
	}
	return errs.Lost(what, "the hold was lost before this call")
}
