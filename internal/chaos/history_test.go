package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// The history of one schedule: every call and return, every Lost and
// Context that ended, every fault, at the instant it happened on the
// bubble's clock (the wall clock on the real server), and the holds they
// imply: a hold is believed from the acquire's return to the first of its
// Context ending, its Lost closing, and its Unlock returning nil (see
// unlocked). A primitive without a Context (a Semaphore's permits) is
// believed until its Release is called.

type evKind uint8

const (
	evCall evKind = iota
	evReturn
	evLost
	evCtxDone
	evFault
)

type event struct {
	at    time.Duration // since the schedule began
	seq   int           // the operation's number; a hold's acquire for evLost and evCtxDone
	kind  evKind
	h     int // handle; -1 for faults
	proc  int
	what  string
	res   string
	names []string
}

func (e event) String() string {
	who := fmt.Sprintf("h%d/p%d", e.h, e.proc)
	if e.h < 0 {
		who = fmt.Sprintf("p%d", e.proc)
	}
	if e.h < 0 && e.proc < 0 {
		who = "server" // the real tier's server faults
	}
	var s string
	switch e.kind {
	case evCall:
		s = fmt.Sprintf("#%d %s %s%v", e.seq, who, e.what, e.names)
	case evReturn:
		s = fmt.Sprintf("#%d %s %s -> %s", e.seq, who, e.what, e.res)
	case evLost:
		s = fmt.Sprintf("#%d %s Lost closed", e.seq, who)
	case evCtxDone:
		s = fmt.Sprintf("#%d %s Context done", e.seq, who)
	case evFault:
		s = fmt.Sprintf("fault %s %s", who, e.what)
	}
	return fmt.Sprintf("%9.3fs %s", e.at.Seconds(), s)
}

// holdRec is one believed hold.
type holdRec struct {
	h, proc   int
	names     []string
	read      bool
	tokens    map[string]uint64
	permits   int // of the name's capacity, at least 1
	start     time.Duration
	end       time.Duration // valid once !open
	open      bool
	endHow    string        // "unlock", "lost", "ctx", "notheld" (an Unlock said so), "replaced" (by a fresh hold of the handle), "open" (when the run ended)
	seq       int           // the acquire that began it
	called    time.Duration // when that acquire was called
	count     int           // re-entries + 1, less the releases in flight
	releaseAt time.Duration // the call of the latest release of a re-entry
	unlocking bool          // the Unlock that drops the last re-entry is in flight
	unlockAt  time.Duration // the call of the latest Unlock that dropped the last re-entry; 0: none
	unlockRet time.Duration // when that Unlock returned an error; 0: it did not
	failedRel int           // releases of a re-entry that failed: each may have been applied
	failedRe  int           // re-entries that failed: each may have been applied, its undo lost
	done      chan struct{}
	cancels   []context.CancelFunc
	lostSeen  bool
	lostCh    <-chan struct{} // the hold's Lost
	ctx       context.Context // the hold's Context, taken when it began; nil for a primitive without one
}

type holdKey struct {
	h    int
	read bool
}

// recorder collects one schedule's history; safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	t0     time.Time
	events []event
	holds  []*holdRec
	cur    map[holdKey]*holdRec // the holds believed in
	latest map[holdKey]*holdRec // each handle's latest hold, believed in or not
	seq    int
	bubble bool                  // the clock is a bubble's
	quiet  time.Duration         // when faults stopped; -1 before
	closed map[int]time.Duration // process → when its Client.Close was called
}

func newRecorder() *recorder {
	return &recorder{t0: time.Now(), cur: make(map[holdKey]*holdRec), latest: make(map[holdKey]*holdRec), quiet: -1, closed: make(map[int]time.Duration)}
}

func (r *recorder) now() time.Duration { return time.Since(r.t0) }

// call records the start of an operation and returns its number. The
// driver calls it before starting the operation's goroutine, so numbers
// follow the schedule.
func (r *recorder) call(h, proc int, what string, names []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.events = append(r.events, event{at: r.now(), seq: r.seq, kind: evCall, h: h, proc: proc, what: what, names: names})
	return r.seq
}

func (r *recorder) ret(seq, h, proc int, what, res string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{at: r.now(), seq: seq, kind: evReturn, h: h, proc: proc, what: what, res: res})
}

// closing records a Client.Close call of proc.
func (r *recorder) closing(proc int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed[proc] = r.now()
}

func (r *recorder) fault(proc int, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{at: r.now(), seq: r.seq, kind: evFault, h: -1, proc: proc, what: what})
}

// holding reports whether handle h believes it holds (read or write).
func (r *recorder) holding(h int, read bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur[holdKey{h, read}] != nil
}

// acquired records an acquire by h that returned true: a fresh hold, or a
// re-entry of the one h believes it has. It reports whether the hold is
// fresh: the driver then has its Context watched (watchCtx).
func (r *recorder) acquired(seq, h, proc int, read bool, names []string, hd hold) (fresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := holdKey{h, read}
	if hr := r.cur[k]; hr != nil {
		if hr.lostCh == hd.lost && maps.Equal(hr.tokens, hd.tokens) {
			hr.count++
			return false
		}
		// The handle took a fresh hold: the one it had is over, though
		// its Lost may not have been seen closing yet.
		how := "replaced"
		select {
		case <-hr.lostCh:
			how = "lost"
		default:
		}
		r.endLocked(hr, how)
	}
	hr := &holdRec{h: h, proc: proc, names: names, read: read, tokens: hd.tokens, permits: max(hd.permits, 1),
		start: r.now(), open: true, seq: seq, count: 1, done: make(chan struct{}), lostCh: hd.lost}
	hr.called = hr.start
	for i := len(r.events) - 1; i >= 0; i-- {
		if e := r.events[i]; e.seq == seq && e.kind == evCall {
			hr.called = e.at
			break
		}
	}
	r.cur[k], r.latest[k] = hr, hr
	r.holds = append(r.holds, hr)
	if hd.lost != nil {
		go r.watch(hr, hd.lost, evLost, "lost")
	}
	return true
}

// watchCtx ends the belief in h's current hold when ctx, a Context of it,
// ends, as a user's work under it would stop. The first one watched is
// the hold's own, taken when it began.
func (r *recorder) watchCtx(h int, read bool, ctx context.Context, cancel context.CancelFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hr := r.cur[holdKey{h, read}]
	if hr == nil {
		cancel()
		return
	}
	if hr.ctx == nil {
		hr.ctx = ctx
	}
	hr.cancels = append(hr.cancels, cancel)
	go r.watch(hr, ctx.Done(), evCtxDone, "ctx")
}

func (r *recorder) watch(hr *holdRec, ch <-chan struct{}, kind evKind, how string) {
	select {
	case <-ch:
		at := r.now()
		if kind == evCtxDone && r.bubble {
			// A Context ends with its hold's Lost, at one instant: let
			// everything of this instant run, and say Lost if it closed.
			time.Sleep(apart / 2)
			select {
			case <-hr.lostCh:
				kind, how = evLost, "lost"
			default:
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if kind == evLost {
			hr.lostSeen = true
		}
		if hr.open {
			if how == "ctx" && hr.unlocking {
				how = "unlock" // the Unlock in flight ended it
			}
			r.events = append(r.events, event{at: at, seq: hr.seq, kind: kind, h: hr.h, proc: hr.proc})
			r.endAtLocked(hr, how, at)
		}
	case <-hr.done:
	}
}

// releasing records an Unlock (Resign, Release) by h whose outcome is not
// looked at (issueAside): the belief ends with the hold's Context. It
// reports whether the call releases a re-entry.
func (r *recorder) releasing(h int, read bool) (reentry bool) {
	u := r.unlockCall(h, read)
	return u.hr != nil && u.open && !u.last
}

// unlock is one Unlock (Resign, Release) call: the handle's latest hold as
// the call found it.
type unlock struct {
	hr   *holdRec      // nil: the handle never held
	at   time.Duration // the call
	open bool          // the hold was believed in at the call
	last bool          // the call drops the last re-entry believed in
	lost bool          // the hold's Lost had closed by the call
}

// unlockCall records the call of an Unlock (Resign, Release) by h; the
// driver passes what it returned to unlocked. A hold without a Context
// (see watchCtx) stops being believed in at the call of its last release.
func (r *recorder) unlockCall(h int, read bool) *unlock {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := &unlock{hr: r.latest[holdKey{h, read}], at: r.now()}
	hr := u.hr
	if hr == nil {
		return u
	}
	u.open, u.lost = hr.open, isClosed(hr.lostCh)
	if !hr.open {
		return u
	}
	if hr.count--; hr.count > 0 {
		hr.releaseAt = u.at
		return u
	}
	hr.count, u.last = 0, true
	if hr.ctx == nil {
		r.endLocked(hr, "unlock")
		return u
	}
	hr.unlocking, hr.unlockAt, hr.unlockRet = true, u.at, 0
	return u
}

// unlocked records how the Unlock u ended (res, as outcome says it) and
// returns what about it broke the contract of Lost and Context (see
// redcoord.Locker), or "".
//
// The last release ends the belief when it returns nil; one that fails
// leaves it (and the hold count) as it was: the user's work goes on under
// the hold's Context until that ends (see "Releases" in package redcoord).
// ErrNotHeld and ErrLeaseLost say the hold is over: by then its Context
// must have ended, and for ErrLeaseLost its Lost closed. A release of a
// re-entry that fails leaves the re-entry counted; one that the handle's
// own state says left it holding nothing ended the hold at once: Redis had
// counted fewer re-entries than the handle (an earlier release failed after
// it was applied), and the hold ended during the call. holds is nil for a
// handle that cannot tell.
func (r *recorder) unlocked(u *unlock, res string, holds func(read bool) bool) (broke string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hr := u.hr
	if hr == nil {
		return ""
	}
	lostNow := isClosed(hr.lostCh)
	ctxDone := hr.ctx != nil && hr.ctx.Err() != nil
	switch {
	case res == "ok" && u.lost:
		broke = "Unlock returned nil after the hold's Lost closed"
	case res == "ok" && !u.open && hr.endHow == "ctx":
		broke = "Unlock returned nil after the hold's Context ended"
	case res == "lost" && hr.lostCh != nil && !lostNow:
		broke = "Unlock returned ErrLeaseLost while the hold's Lost was open"
	case (res == "lost" || res == "not held") && u.open && hr.ctx != nil && !ctxDone:
		broke = "Unlock returned " + res + " while the hold's Context was live"
	}
	if u.open && u.last && !hr.open && hr.endHow == "unlock" && res != "ok" && res != "lost" && res != "not held" {
		// The call ended the hold's Context, which ended the belief
		// while the call was in flight; that it failed still leaves the
		// hold's lease in Redis (see remnantEnd).
		hr.unlockRet = r.now()
	}
	if !hr.open || !u.open {
		return broke
	}
	if u.last {
		hr.unlocking = false
	}
	switch {
	case u.last && res == "ok":
		r.endLocked(hr, "unlock")
	case u.last && (res == "lost" || res == "not held"):
		if !lostNow && !ctxDone {
			r.endLocked(hr, "notheld") // its Context, flagged above, is left running
		}
	case u.last:
		hr.count, hr.unlockRet = 1, r.now()
	case holds != nil && !holds(hr.read):
		if broke == "" {
			broke = readCountBroke(hr, res)
		}
		r.endAtLocked(hr, "unlock", hr.releaseAt)
	case res != "ok":
		hr.count++
		hr.failedRel++
	}
	return broke
}

// isClosed reports whether ch is closed; a nil ch never is.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (r *recorder) endLocked(hr *holdRec, how string) { r.endAtLocked(hr, how, r.now()) }

func (r *recorder) endAtLocked(hr *holdRec, how string, at time.Duration) {
	hr.open, hr.end, hr.endHow = false, at, how
	close(hr.done)
	for _, c := range hr.cancels {
		c()
	}
	k := holdKey{hr.h, hr.read}
	if r.cur[k] == hr {
		delete(r.cur, k)
	}
}

// finish ends every belief still open at the end of the run (endHow "open")
// and stops the watchers.
func (r *recorder) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, hr := range r.holds {
		if hr.open {
			r.endLocked(hr, "open")
		}
	}
}

// sorted returns the events in a canonical order: by instant, then by
// operation number, then by kind. Goroutines that act at one instant of
// the bubble's clock append in any order; this order does not depend on it.
func (r *recorder) sorted() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := slices.Clone(r.events)
	slices.SortStableFunc(ev, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq), cmp.Compare(a.kind, b.kind),
			cmp.Compare(a.h, b.h), strings.Compare(a.what, b.what))
	})
	return ev
}

// text is the whole history, one event a line: what the replay test compares.
func (r *recorder) text() string {
	var b strings.Builder
	for _, e := range r.sorted() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// believed returns h's write hold believed in, if any, with its count of
// re-entries and of releases of a re-entry that failed.
func (r *recorder) believed(h int) (hr *holdRec, count, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hr = r.cur[holdKey{h, false}]
	if hr == nil {
		return nil, 0, 0
	}
	return hr, hr.count, hr.failedRel
}

// reentryFailed records that a re-entry of hr failed: Redis may have
// applied it and kept it (its reply and its undo lost), a hold the handle
// does not count and its last release drops.
func (r *recorder) reentryFailed(hr *holdRec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hr.failedRe++
}

// failedReentries returns how many re-entries of hr failed.
func (r *recorder) failedReentries(hr *holdRec) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return hr.failedRe
}
