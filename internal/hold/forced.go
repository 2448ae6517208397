package hold

import (
	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/errs"
	"github.com/redcoord/redcoord/internal/obs"
)

// Heed has the Tracker list its holds in n as the holds of held, so that a
// forced unlock's message ends them (see ForcedUpTo). Call it before the
// first acquire.
func (t *Tracker) Heed(n *core.Notices, held core.Held) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notices, t.owner, t.read = n, held.Owner, held.Read
}

// ForcedUpTo records that a forced unlock ended the owner's hold whose
// token was at most token, as its message says (see core.Notices): a loss,
// if the current hold is not a later one. Its contexts end with a cause
// that matches ErrLeaseLost and says it was forced.
func (t *Tracker) ForcedUpTo(token uint64) {
	t.mu.Lock()
	if t.count == 0 || t.token > token {
		t.mu.Unlock()
		return
	}
	t.forcedUnlock()
}

// forcedUnlock ends the current hold as forced out, unlocks mu, which the
// caller holds, and then calls the hold's OnLost, if any.
func (t *Tracker) forcedUnlock() {
	t.emitLocked(obs.LeaseLost, nil)
	t.scoped.End(func(what string) error {
		return errs.Of(what, errs.ErrLeaseLost, "forced out by ForceUnlock")
	})
	t.goneLocked()
	onLost := t.onLostLocked()
	t.mu.Unlock()
	if onLost != nil {
		onLost()
	}
}
