//go:build mutants

package main

// Prims of the Go packages (see mutant.Prims).
var (
	holders = []string{"rlock", "rfairlock", "rrwlock", "multi", "redlock", "relection", "xsemaphore"} // hold.Tracker
	woken   = []string{"rlock", "rrwlock", "multi"}                                                    // core.ClientWaiter
	sems    = []string{"semaphore", "xsemaphore"}
)

// goMutants are bugs in the guards of the Go code: holds, the watchdog,
// per-Client waits, the compounds, the semaphores.
var goMutants = []mutant{
	// internal/hold
	{
		Name: "hold-reentry-after-loss-counted", File: "internal/hold/took.go", Prims: holders,
		Old: "if t.count == 0 || t.token != b.Token {",
		New: "if false {",
		Breaks: "a re-entry whose hold was lost while its request was on its way is counted as" +
			" held: the handle believes in a hold Redis no longer has",
	},
	{
		Name: "hold-fixed-lease-timer-late", File: "internal/hold/took.go", Prims: holders,
		Old:    "l.Fixed-lease.Margin(l.Fixed)-time.Since(l.Since)",
		New:    "l.Fixed+lease.Margin(l.Fixed)-time.Since(l.Since)",
		Breaks: "a fixed lease's Lost closes a margin after Redis may have expired the hold instead of a margin before",
	},
	{
		Name: "hold-took-failure-not-undone", File: "internal/hold/took.go", Prims: holders,
		Old: "\t\t_ = undo.Leave(lctx)\n",
		New: "\t\t_ = lctx\n",
		Breaks: "an acquire whose hold could not be recorded (late reply, failed confirmation)" +
			" is not given back: Redis keeps it for nobody until its lease ends",
	},
	{
		Name: "hold-forced-own-token-kept",
		File: "internal/hold/forced.go", Prims: []string{"rlock", "rfairlock", "rrwlock"},
		Old: "if t.count == 0 || t.token > token {",
		New: "if t.count == 0 || t.token >= token {",
		Breaks: "off by one: a ForceUnlock notice naming exactly the current hold's token does" +
			" not end it, so the forced holder keeps believing",
	},
	{
		// Dropping the guard's "m != o.t.lost" changes nothing observable:
		// a ctx that carries an ended hold's mark descends from its Context,
		// which the hold's end cancelled, and go-redis sends nothing on a
		// done ctx, so the acquire fails with the ctx's error either way.
		// Only a ctx that strips cancellation (context.WithoutCancel) and a
		// second goroutine's fresh hold taken meanwhile would tell.
		Name: "hold-reenter-live-refused",
		File: "internal/hold/hold.go", Prims: []string{"rlock", "rfairlock", "rrwlock"},
		Old: "m != nil && (o.t.count == 0 || m != o.t.lost)",
		New: "m != nil && (o.t.count == 0 || m == o.t.lost)",
		Breaks: "the re-entry guard inverted: a re-entry with the live hold's Context is refused" +
			" as if that hold had ended (ErrLeaseLost while Lost is open)",
	},
	{
		Name: "hold-extend-gone-kept", File: "internal/hold/extend.go", Prims: holders,
		Old:    "case !ok:\n\t\tif t.count > 0 {\n\t\t\tt.lostLocked()\n\t\t}\n",
		New:    "case !ok:\n",
		Breaks: "an Extend that finds the hold gone returns ErrLeaseLost but leaves the hold counted and Lost open",
	},
	{
		Name: "hold-release-not-held-kept", File: "internal/hold/release.go", Prims: holders,
		Old: "\tif t.count > 0 || t.gone {\n\t\tt.lostLocked()\n",
		New: "\tif t.count > 0 || t.gone {\n",
		Breaks: "a release that Redis answers 'not held' returns ErrLeaseLost but leaves the" +
			" hold counted and Lost open",
	},
	{
		Name: "fair-grant-message-trusted", File: "internal/hold/attempt_fair.go", Prims: fairLocks,
		Old: "if heard && !a.fixed && grantedAt >= a.at && h.S.Config.Replicas.N == 0 {",
		New: "if _ = heard; !a.fixed && h.S.Config.Replicas.N == 0 {",
		Breaks: "a fair lock's grant message is taken as the hold without asking Redis, though" +
			" a ForceUnlock this Client cannot hear, or a grant older than the last try, may have ended it",
	},
	{
		Name: "fair-grant-trusted-unheard", File: "internal/core/notices.go", Prims: fairLocks,
		Old: "if sub == nil || !sub.Heard(n.channel) {",
		New: "if sub == nil {",
		Breaks: "a grant is trusted though the Client's channel was not subscribed before it:" +
			" a force's notice may never come",
	},
	{
		Name: "fair-grant-trusted-after-notice", File: "internal/core/notices.go", Prims: fairLocks,
		Old:    "return !n.never && n.forced[owner] < token",
		New:    "return !n.never",
		Breaks: "a grant is trusted though a force's notice that named it was heard already",
	},
	{
		Name: "fair-grant-notice-before-record-ignored", File: "internal/core/notices.go", Prims: fairLocks,
		Old:    "forced = t >= token",
		New:    "forced = t >= token && false",
		Breaks: "a hold whose force's notice came before it was recorded is reported held, with Lost open, until a renewal",
	},
	// internal/lease
	{
		Name: "lease-not-held-not-lost", File: "internal/lease/watchdog.go", Prims: holders,
		Old: "w.log.Warn(\"redcoord: lease lost: hold is gone\", \"keys\", l.r.Keys)\n",
		New: "w.log.Warn(\"redcoord: lease lost: hold is gone\", \"keys\", l.r.Keys)\n\t\t\tcontinue\n",
		Breaks: "a watchdog that does not mark a 'not held' renewal as lost: the holder believes" +
			" until the expiry timer fires, a whole TTL later",
	},
	{
		Name: "lease-deadline-a-tick-late", File: "internal/lease/watchdog.go", Prims: holders,
		Old:    "return w.epoch.Add(l.lastOK + w.ttl - Margin(w.ttl))",
		New:    "return w.epoch.Add(l.lastOK + w.ttl + w.interval)",
		Breaks: "a lease whose renewals fail is declared lost a tick after Redis may have dropped it",
	},
	{
		Name: "lease-renewal-dated-at-reply", File: "internal/lease/watchdog.go", Prims: holders,
		Old: "if d := sent.Sub(w.epoch); d > l.lastOK {",
		New: "if d := time.Since(w.epoch); d > l.lastOK {",
		Breaks: "a renewal's lease is counted from its reply, not from when it was sent: a" +
			" delayed renewal stretches the holder's belief past Redis's lease",
	},
	{
		Name: "lease-heartbeat-stop-ignored", File: "internal/lease/heartbeat.go",
		Old: "\th.stopped = true\n\tif h.watched != nil {\n\t\th.watched.Remove()",
		New: "\th.stopped = true\n\tif h.watched != nil {\n\t\t_ = h.watched",
		Breaks: "a heartbeat's Stop keeps renewing the registration: a waiter that left or" +
			" acquired stays registered, and releases spend their wakes on it",
	},
	// internal/core/clientwait.go
	{
		Name: "waits-others-counts-self", File: "internal/core/clientwait.go", Prims: woken,
		Old: "\t\tif k > 0 && (least == 0 || n < least) {\n",
		New: "\t\tif k >= 0 && (least == 0 || n < least) {\n",
		Breaks: "a Client's lone waiter counts itself as another: its try keeps the registration" +
			" after taking the lock and its leave keeps it after giving up",
	},
	{
		Name: "waits-least-counts-self", File: "internal/core/clientwait.go", Prims: sems,
		Old: "\t\t\tk-- // the caller's own\n",
		New: "\t\t\t_ = k // the caller's own, counted as another's\n",
		Breaks: "a semaphore acquire counts itself among the Client's other blocked acquires:" +
			" the Client stays registered after its last waiter takes permits",
	},
	{
		Name: "clientwait-exit-no-wake", File: "internal/core/clientwait.go", Prims: woken,
		Old: "\tif hb, err := c.s.Hub(); err == nil && hb != nil {\n\t\thb.WakeOne(c.ch)\n\t}\n",
		New: "",
		Breaks: "a wake not delivered: a waiter whose try dropped the registration exits without" +
			" waking the local waiters that joined without a try",
	},
	// rlock: compound, MultiMutex, RedLock
	{
		Name: "compound-loss-one-part-late", File: "rlock/compound.go", Prims: []string{"multi", "redlock"},
		Old: "left.Store(int64(len(parts) - need + 1))",
		New: "left.Store(int64(len(parts) - need + 2))",
		Breaks: "a compound's loss declared one part late: a MultiMutex with one name lost, or a" +
			" RedLock below its quorum, still reports the hold",
	},
	{
		// Dropping the check of the parts after acquireAll changes nothing
		// observable: compound.held counts a part lost before it is watched,
		// ends the hold at once and the acquire starts again (errTakenLost),
		// as errRetake would; only a TryLock whose part is lost during a
		// later part's confirmation would return an error instead of
		// (false, nil). The mutant below weakens the same rule (a MultiMutex
		// holds only while every part does) where nothing backs it up.
		Name: "multi-hold-needs-one-part-less", File: "rlock/multi.go", Prims: []string{"multi"},
		Old: "mm.c.held(mm.ms, len(mm.ms), false)",
		New: "mm.c.held(mm.ms, len(mm.ms)-1, false)",
		Breaks: "a MultiMutex's hold needs every part but one: a name lost (deleted, expired)" +
			" leaves the hold believed while another owner takes that name",
	},
	{
		Name: "redlock-quorum-minority", File: "rlock/redlock.go", Prims: []string{"redlock"},
		Old:    "rl.quorum = len(rl.ms)/2 + 1",
		New:    "rl.quorum = len(rl.ms) / 2",
		Breaks: "RedLock's quorum off by one: a minority of servers grants the lock, so two handles hold it at once",
	},
	{
		Name: "redlock-validity-unchecked", File: "rlock/redlock_attempt.go", Prims: []string{"redlock"},
		Old: "if len(granted) >= rl.quorum && validity > 0 {",
		New: "if len(granted) >= rl.quorum && validity > -length {",
		Breaks: "validity's sign not checked: an attempt that took longer than its lease (less" +
			" drift) counts as held, though its first grants may have expired",
	},
	// rsemaphore
	{
		Name: "xsem-permit-lease-from-reply", File: "rsemaphore/expirable.go", Prims: []string{"xsemaphore"},
		Old: "return taken{a.Token, now}, acquire.Attempt{Acquired: true}, nil",
		New: "return taken{a.Token, time.Now()}, acquire.Attempt{Acquired: true}, nil",
		Breaks: "a permit's lease is dated from the acquire's reply instead of its request: a" +
			" late reply stretches the holder's belief past Redis's lease",
	},
	{
		Name: "sem-unfair-leave-skipped", File: "rsemaphore/semaphore.go", Prims: []string{"semaphore"},
		Old: "\t\tif untouched {\n\t\t\treturn nil\n\t\t}",
		New: "\t\tif untouched || hb == nil {\n\t\t\treturn nil\n\t\t}",
		Breaks: "an unfair Acquire that gives up never sends its leave: permits its lost-reply" +
			" try took are never returned",
	},
	{
		Name: "sem-hand-on-off-by-one", File: "rsemaphore/clientwait.go", Prims: sems,
		Old: "hb.WakeFree(clientCh, n)",
		New: "hb.WakeFree(clientCh, n-1)",
		Breaks: "a permit count off by one: a release hands one permit fewer to the Client's own" +
			" waiters, so a release of 1 wakes none of them",
	},
}
