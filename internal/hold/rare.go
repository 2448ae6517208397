package hold

import "time"

// rare is the part of a Tracker's state that only a hold that was lost,
// Extended, not released, or taken with an OnLost needs: most handles
// never make it.
type rare struct {
	// onLost is the current hold's Lease.OnLost.
	onLost func()
	// maybeEnd is when the current hold may end in Redis because of an
	// Extend whose outcome is unknown (its reply was lost): the hold is
	// reported lost then, unless a later Extend succeeds. bound fires at it.
	maybeEnd time.Time
	bound    *time.Timer
	// ending is when the current hold ends, set when a release of it
	// failed: it is no longer renewed, and a timer reports it lost then.
	ending time.Time
	// extended is when the current hold's fixed lease was last set by
	// an Extend; zero: when the hold was taken (since).
	extended time.Time
	// extending is, while an Extend is on its way, when the hold may
	// end in Redis (the end its timer watches); zero otherwise.
	extending time.Time
	// lostArg is the token, as a script argument, of the last hold lost:
	// what a release after the loss names (see ReleaseArg).
	lostArg any
}

// rareLocked returns rare, made first if need be; the caller holds mu.
func (t *Tracker) rareLocked() *rare {
	if t.rare == nil {
		t.rare = new(rare)
	}
	return t.rare
}

// onLostLocked returns the current hold's OnLost, if any; the caller
// holds mu.
func (t *Tracker) onLostLocked() func() {
	if t.rare == nil {
		return nil
	}
	return t.rare.onLost
}

// ends returns a copy of rare, zero when it was never made; the caller
// holds mu.
func (t *Tracker) ends() rare {
	if t.rare == nil {
		return rare{}
	}
	return *t.rare
}
