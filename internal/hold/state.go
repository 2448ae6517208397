package hold

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/scripts"
)

// Named names the lock in errors, as errs.Tag does (`rlock "orders:42"`),
// and one of its holds after it when what is not "" (`rrwlock "x": read
// lock`).
func (h *Handle) Named(what string) string {
	tag := errs.Tag(h.Lock.Kind, h.Name)
	if what != "" {
		tag += ": " + what
	}
	return tag
}

// Forget deletes the name's fence when no lock of any kind holds the name
// or waits for it (none of the schema's InUse keys exists, see
// core.Key.InUse) and the fence's last token is not ahead of the server's
// clock, and reports whether it did; otherwise it is (false, nil), and
// nothing is deleted. The owners' markers are left to expire: a late copy
// of a request must still be refused, a retried release still recognised.
func (h *Handle) Forget(ctx context.Context) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	return h.Lock.Forget(ctx, h.S.Writer(), h.S.InUse(h.Name))
}

// Force is a primitive's force (scripts.Lock.Force and its kin), sent as
// request req: it ends the holds of the name and tells a forced-out
// holder's Client on the notice channel that the prefix notice starts,
// provided the fence has not changed since it was read as upto.
type Force func(ctx context.Context, rdb redis.Scripter, notice, upto, req string) (scripts.Forced, error)

// ForceUnlock ends the holds of the name there are when it is called, with
// force, and reports whether it ended any; a hold of this handle is then
// lost. It reads the fence's last token (unless ctx has one, see
// WithSeenFence) and sends it with the force, which changes nothing when
// the fence moved since: the holds it read about ended on their own and
// another took the name, which it leaves alone (false). A copy of the force that reaches Redis again (a go-redis retry,
// a late copy) replies as the first did and changes nothing.
func (h *Handle) ForceUnlock(ctx context.Context, force Force) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	upto, seen := ctx.Value(seenFenceKey{}).(string)
	if !seen {
		var err error
		if upto, err = h.Lock.LastToken(ctx, h.S.RDB); err != nil {
			return false, err
		}
	}
	got, err := force(ctx, h.S.RDB, h.S.NoticePrefix(h.Name), upto, h.NextRequest())
	if err == nil && got == scripts.ForceDone {
		h.Hold.Forced()
	}
	return got == scripts.ForceDone, err
}

// seenFenceKey is the context key of WithSeenFence.
type seenFenceKey struct{}

// WithSeenFence returns ctx with which ForceUnlock forces only the holds
// there were when the caller read the fence's last token as upto ("0":
// none), instead of reading it itself: a caller that showed the holds and
// asked whether to force them (the CLI's force-unlock) forces only those,
// and not a hold taken while it waited for the answer.
func WithSeenFence(ctx context.Context, upto string) context.Context {
	return context.WithValue(ctx, seenFenceKey{}, upto)
}

// State reads who holds the lock.
func (h *Handle) State(ctx context.Context) (scripts.State, error) {
	if err := h.Check(ctx); err != nil {
		return scripts.State{}, err
	}
	return h.Lock.State(ctx, h.S.RDB)
}

// IsLocked reports whether any owner holds the lock.
func (h *Handle) IsLocked(ctx context.Context) (bool, error) {
	st, err := h.State(ctx)
	return st.Held, err
}

// HoldCount returns how many times this handle holds the lock, as Redis sees it.
func (h *Handle) HoldCount(ctx context.Context) (int64, error) {
	st, err := h.State(ctx)
	if err != nil || st.Owner != h.Lock.Owner {
		return 0, err
	}
	return st.Count, nil
}

// Holder returns who holds the lock; ok is false when it is free.
func (h *Handle) Holder(ctx context.Context) (redcoord.Holder, bool, error) {
	st, err := h.State(ctx)
	if err != nil || !st.Held {
		return redcoord.Holder{}, false, err
	}
	return Holder(st), true, nil
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
