//go:build mutants

package main

import "slices"

// mutants is every mutant the harness knows, in the order it runs them:
// the scripts' guards (here and in mutants_lua2.go), then the Go code's
// (mutants_go.go).
var mutants = slices.Concat(lockMutants, rwSemMutants, goMutants, revertMutants)

// Prims of the script families (see mutant.Prims).
var (
	locks     = []string{"rlock", "multi", "redlock"}
	heldLocks = []string{"rlock", "rfairlock", "multi", "redlock", "relection"} // lock_renew, lock_extend
	fairLocks = []string{"rfairlock", "relection"}
	queues    = []string{"rfairlock", "relection", "semaphore"}
)

// lockMutants are bugs in the guards of the locks' scripts and the
// libraries they share.
var lockMutants = []mutant{
	// lock_*
	{
		Name: "lock-renew-owner-only", File: "scripts/lock_renew.lua", Prims: heldLocks,
		Old: "if is_named(h[1], h[2], ARGV[5], ARGV[7]) then",
		New: "if h[1] == ARGV[5] then",
		Breaks: "renewal matches the owner only, not owner+token: a late renewal of a lost hold extends the owner's next" +
			" hold, and the watchdog keeps a hold Redis gave to a later acquire",
	},
	{
		Name: "lock-extend-owner-only", File: "scripts/lock_extend.lua", Prims: heldLocks,
		Old: "if not is_named(h[1], h[2], ARGV[5], ARGV[7]) then",
		New: "if h[1] ~= ARGV[5] then",
		Breaks: "Extend matches the owner only: an Extend of a lost hold succeeds on a later hold of the owner and reports" +
			" the lost one held",
	},
	{
		Name: "lock-acquire-reenter-any-token", File: "scripts/lock_acquire.lua", Prims: locks,
		Old: "if h[2] and h[4] == ARGV[9] then",
		New: "if h[2] then",
		Breaks: "re-entry no longer names the hold's token: an orphan (an acquire whose reply and undo were lost) is" +
			" re-entered instead of taken over, so the handle counts a hold it cannot release",
	},
	{
		Name: "lock-acquire-left-unchecked", File: "scripts/lock_acquire.lua", Prims: locks,
		Old: "if was_left(KEYS[3], req) or is_stale(h[2], owner, req, h[5])\n",
		New: "if is_stale(h[2], owner, req, h[5])\n",
		Breaks: "request-id (left marker) check skipped: a late copy of an acquire that was given up takes the lock for" +
			" nobody",
	},
	{
		Name: "lock-release-owner-only", File: "scripts/lock_release.lua", Prims: locks,
		Old:    "local mine = is_named(h[2], h[5], ARGV[5], ARGV[8])",
		New:    "local mine = h[2] == ARGV[5]",
		Breaks: "release matches the owner only, not owner+token: a late release of a lost hold drops the owner's next hold",
	},
	{
		Name: "lock-release-no-wake", File: "scripts/lock_release.lua", Prims: locks,
		Old:    "local _, msg = wake_one(KEYS[4], waiting, PUBLISH, CHANNEL, req)",
		New:    "local _, msg = wake_one(KEYS[4], 0, PUBLISH, CHANNEL, req)",
		Breaks: "a release to zero wakes no registered waiter: waiters of other processes are stranded until their poll",
	},
	{
		Name: "lock-leave-keeps-registration", File: "scripts/lock_leave.lua", Prims: locks,
		Old: "removed = redis.call('ZREM', KEYS[3], client_of(req))",
		New: "removed = 0",
		Breaks: "a registration not removed on leave: the Client's last waiter gives up but stays registered, and the next" +
			" release spends its wake on it",
	},
	{
		Name: "lock-beat-revives-lapsed", File: "scripts/lock_beat.lua", Prims: locks,
		Old: "if not deadline or tonumber(deadline) <= now_ms() then",
		New: "if not deadline then",
		Breaks: "a registration's heartbeat deadline not checked: a lapsed registration (its process paused) is renewed" +
			" instead of reported gone",
	},
	{
		Name: "lock-multi-reenter-any-token", File: "scripts/lock_multi.lua", Prims: []string{"multi"},
		Old: "elseif h[2] and h[3] == ARGV[3 * i + 7] then",
		New: "elseif h[2] then",
		Breaks: "MultiMutex keeps any hold of the owner as the handle's, token unchecked: an orphan is kept as it is" +
			" (reply 0) instead of taken over with a fresh token",
	},
	// lib.lua, queue_lib.lua
	{
		Name: "lib-token-not-incremented", File: "scripts/lib.lua",
		Old: "math.max(last + 1, us)",
		New: "math.max(last, us)",
		Breaks: "`last + 1` turned into `last`: two acquisitions within one microsecond of server time (or with the clock" +
			" behind) get the same fencing token",
	},
	{
		Name: "lib-release-stale-copy", File: "scripts/lib.lua",
		Prims: []string{"rlock", "rfairlock", "rrwlock", "multi", "redlock", "relection"},
		Old:   "if last and numbered_below(req, last) then",
		New:   "if false and numbered_below(req, last) then",
		Breaks: "request number not compared in release_hold: a late copy of an earlier release drops one hold of a" +
			" re-entered lock",
	},
	{
		Name: "lib-wake-one-not-published", File: "scripts/lib.lua", Prims: []string{"rlock", "rrwlock", "multi", "redlock"},
		Old:    "notify(cmd, client_channel(channel, first), msg) -- a hint (see notify)",
		New:    "-- notify(cmd, client_channel(channel, first), msg) -- a hint (see notify)",
		Breaks: "a wake not published: wake_one takes a waiter out of the registry without telling it; it waits for its poll",
	},
	{
		Name: "lib-taken-stays-registered", File: "scripts/lib.lua", Prims: []string{"rlock", "rrwlock", "multi"},
		Old: "elseif (mode == 'r' or mode == 'u') and waiting > 0 then",
		New: "elseif mode == 'u' and waiting > 0 then",
		Breaks: "a Client whose last waiter takes the lock is not unregistered: the next release spends its wake on the" +
			" holder",
	},
	{
		Name: "queue-head-ignores-heartbeat", File: "scripts/queue_lib.lua", Prims: queues,
		Old:    "    if deadline and tonumber(deadline) > now then\n      return req\n",
		New:    "    if deadline then\n      return req\n",
		Breaks: "a heartbeat deadline not checked when purging a fair queue: a dead waiter at the head blocks the queue",
	},
	{
		Name: "queue-pop-ignores-heartbeat", File: "scripts/queue_lib.lua", Prims: queues,
		Old: "    if deadline and tonumber(deadline) > now then\n      local entry",
		New: "    if deadline then\n      local entry",
		Breaks: "a heartbeat deadline not checked when handing a fair lock on: the lock is granted to a dead waiter, and" +
			" sits until its lease ends",
	},
	// fair_*, elect_*
	{
		Name: "fair-release-owner-only", File: "scripts/fair_release.lua", Prims: fairLocks,
		Old: "local mine = is_named(h[2], h[5], ARGV[5], ARGV[8])",
		New: "local mine = h[2] == ARGV[5]",
		Breaks: "an owner-only match where owner+token is checked: a release naming a lost hold drops the grant a waiting" +
			" acquire of the same handle was given since",
	},
	{
		Name: "fair-acquire-reenter-any-token", File: "scripts/fair_acquire.lua", Prims: fairLocks,
		Old: "  if h[4] ~= ARGV[11] then\n",
		New: "  if false then\n",
		Breaks: "fair re-entry ignores the handle's token: a grant or orphan of the owner is re-entered (count+1, old" +
			" token) instead of taken as a fresh hold",
	},
	{
		Name: "fair-acquire-left-unchecked", File: "scripts/fair_acquire.lua", Prims: fairLocks,
		Old: "if was_left(KEYS[6], req) or is_stale(h[2], owner, req, h[5])\n",
		New: "if is_stale(h[2], owner, req, h[5])\n",
		Breaks: "request-id (left marker) check skipped: a late copy of a given-up acquire takes the lock or queues for" +
			" nobody",
	},
	{
		Name: "fair-heartbeat-no-hand-on", File: "scripts/fair_heartbeat.lua", Prims: fairLocks,
		Old: "  fair_check_fence(queued)\n  fair_hand_on(now)\n",
		New: "  fair_check_fence(queued)\n",
		Breaks: "a heartbeat that finds the holder's lease ran out does not hand the lock on: queued waiters wait for a" +
			" script that changes the lock",
	},
	{
		Name: "fair-leave-no-hand-on", File: "scripts/fair_leave.lua", Prims: fairLocks,
		Old:    "  fair_hand_on_or_vacate(queued)\n  return 1\n",
		New:    "  redis.call('DEL', KEYS[1])\n  return 1\n",
		Breaks: "a grant given back by a leave is not handed on: the next queued waiter is stranded",
	},
	{
		Name: "elect-proclaim-term-unchecked", File: "scripts/elect_proclaim.lua", Prims: []string{"relection"},
		Old: "if not is_named(h[2], h[3], ARGV[5], ARGV[6]) then",
		New: "if h[2] ~= ARGV[5] then",
		Breaks: "Proclaim matches the owner only, not the term: a proclaim of an ended term changes the value of the" +
			" owner's next term",
	},
}
