package hold

import (
	"context"
	"fmt"

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

// Force is a primitive's force (scripts.Lock.Force and its kin): it ends
// the holds of the name, tells a forced-out holder's Client on the notice
// channel that the prefix notice starts, provided the fence has handed out
// no token after upto.
type Force func(ctx context.Context, rdb redis.Scripter, notice, upto string) (scripts.Forced, error)

// forceTries bounds how often ForceUnlock reads the fence again because
// the lock changed hands between its read and its force.
const forceTries = 5

// ForceUnlock deletes the lock with force and reports whether it was held;
// a hold of this handle is then lost. It reads the fence's last token
// first and sends it with the force, which ends only holds taken up to it:
// the force is about the holds there were when it was called, and a copy
// of it that reaches Redis late (a go-redis retry) leaves a hold taken
// since alone.
func (h *Handle) ForceUnlock(ctx context.Context, force Force) (bool, error) {
	if err := h.Check(ctx); err != nil {
		return false, err
	}
	for range forceTries {
		upto, err := h.Lock.LastToken(ctx, h.S.RDB)
		if err != nil {
			return false, err
		}
		got, err := force(ctx, h.S.RDB, h.S.NoticePrefix(h.Name), upto)
		if err != nil {
			return false, err
		}
		if got != scripts.ForceMoved {
			if got == scripts.ForceDone {
				h.Hold.Forced()
			}
			return got == scripts.ForceDone, nil
		}
	}
	return false, fmt.Errorf("ForceUnlock: the lock changed hands %d times while it was being forced; try again", forceTries)
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
