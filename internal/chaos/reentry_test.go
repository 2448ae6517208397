package chaos

import (
	"errors"
	"fmt"

	"github.com/redcoord/redcoord"
)

// checkReentry checks a re-entry's failure against its hold: an acquire
// by a handle that believed in its write hold when called (hr, nil when it
// did not) says with ErrLeaseLost that the hold it re-entered has ended;
// the hold's Lost must then be closed or its Context ended. A re-entry
// refused while its hold goes on is check "reentry".
func (rn *run) checkReentry(seq int, o opStep, hr *holdRec, err error) {
	if hr == nil || !rn.c.reentrant || o.a.read || !errors.Is(err, redcoord.ErrLeaseLost) {
		return
	}
	rn.rec.mu.Lock()
	live := hr.open && !isClosed(hr.lostCh) && (hr.ctx == nil || hr.ctx.Err() == nil)
	rn.rec.mu.Unlock()
	if live {
		rn.violate(violation{check: "reentry", name: hr.names[0], at: rn.rec.now(), seq: hr.seq, a: hr,
			msg: fmt.Sprintf("h%d's re-entry #%d of %s failed with %q while the hold's Lost was open and its Context live",
				o.h, seq, describeHold(hr), outcome(false, err))})
	}
}
