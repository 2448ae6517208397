//go:build mutants

package main

// revertMutants undo, one line each, the fixes of the defects that the
// suite's simulated network and belief checkers were built to find; each
// brings back the defect its name says (see the commits that fixed them).
var revertMutants = []mutant{
	{
		Name: "revert-late-read-renewal", File: "scripts/rw_renew.lua", Prims: []string{"rrwlock"},
		Old: "  if not named then\n    return 0\n  end\n",
		New: "",
		Breaks: "a renewal of a read hold finds it by its owner alone: a late copy renews the" +
			" owner's next read hold, cutting its fixed lease",
	},
	{
		Name: "revert-compound-partial-unlock", File: "rlock/compound.go", Prims: []string{"multi", "redlock"},
		Old: "\tif !all || lost {\n",
		New: "\tif !all {\n\t\t_ = c.t.EndRelease(0, errTakenLost, c.what)\n\t\treturn\n\t}\n\tif lost {\n",
		Breaks: "an Unlock that fails to release one part keeps the compound held: Lost stays" +
			" open while a part is free",
	},
	{
		Name: "revert-drop-gap",
		File: "internal/core/clientwait.go", Prims: []string{"rlock", "rrwlock", "multi", "semaphore", "xsemaphore"},
		Old: "\tif stale {\n\t\treg.leaving = make(chan struct{})\n\t} else if last" +
			" {\n\t\tdelete(w.m, c.key)\n\t}\n",
		New: "\tif last {\n\t\tdelete(w.m, c.key)\n\t}\n\tif stale {\n\t\treg.leaving =" +
			" make(chan struct{})\n\t}\n",
		Breaks: "the last waiter's Exit removes the Client's wait record before its drop: a new" +
			" acquire registers meanwhile, and the drop deletes its registration",
	},
	{
		Name: "revert-drop-under-lock", File: "internal/core/clientwait.go",
		Prims: []string{"rlock", "rrwlock", "multi", "semaphore", "xsemaphore"},
		Old:   "\tw.mu.Unlock()\n\tif stale {\n\t\tdefer w.endDrop(c.key, reg)\n\t\tc.drop()\n\t}\n",
		New:   "\tif stale {\n\t\tc.drop()\n\t}\n\tw.mu.Unlock()\n\tif stale {\n\t\tw.endDrop(c.key, reg)\n\t}\n",
		Breaks: "the last waiter's registration drop is sent under the Client's waits lock: during a slow drop" +
			" every acquire of the Client, on any name, waits for it",
	},
	{
		Name: "revert-sem-leave-wake", File: "scripts/sem_leave.lua", Prims: []string{"semaphore"},
		Old:    "local woken = ARGV[7] == '1' and not listed",
		New:    "local woken = ARGV[7] == '1' and last and not listed",
		Breaks: "a leave that gives up its Client's wake passes it on only when it is the Client's last waiter",
	},
	{
		Name: "revert-reentry-count-from-redis", File: "internal/hold/took.go",
		Prims: []string{"rlock", "rfairlock", "rrwlock"},
		Old:   "\t\tt.count++\n",
		New:   "\t\tt.count = count\n",
		Breaks: "a re-entry adopts Redis's hold count, which may include a re-entry whose caller" +
			" was told it failed: the handle's Unlocks leave the name held and renewed",
	},
	{
		Name: "revert-context-at-send", File: "internal/hold/release.go", Prims: holders,
		Old: "\t\tt.scoped.End(releasedCause)\n\t\tt.unlocking = true\n",
		New: "",
		Breaks: "a hold's Contexts end when its last release's reply comes, not when the release" +
			" is sent: work runs on while Redis gave the name to another",
	},
	{
		Name: "revert-late-acquire-copy",
		File: "scripts/lib.lua", Prims: []string{"rlock", "rfairlock", "rrwlock", "multi"},
		Old: "  return seen_owner == owner and last and numbered_below(req, last)\n",
		New: "  return false\n",
		Breaks: "a late copy of an acquire or a re-entry is applied: it re-enters the owner's" +
			" fresh hold, counting a hold nobody releases",
	},
	{
		Name: "revert-released-copy", File: "scripts/lib.lua",
		Prims: []string{"rlock", "rfairlock", "rrwlock", "relection"},
		Old:   "  local x = taken and taken ~= '' and 'x:' .. taken or nil\n",
		New:   "  local x = nil\n",
		Breaks: "a late copy of the acquire that took a hold since released to zero takes the free" +
			" name for nobody until its lease ends",
	},
	{
		Name: "revert-ended-reentry-copy", File: "scripts/lib.lua",
		Prims:  []string{"rlock", "rfairlock", "rrwlock", "relection"},
		Old:    "  return held ~= '0' and done_has(key, 'e', held)\n",
		New:    "  return false\n",
		Breaks: "a late copy of a re-entry of a hold since released to zero takes the free name for nobody",
	},
	{
		Name: "revert-force-names-no-hold", File: "scripts/lib.lua", Prims: []string{"rlock", "rfairlock", "rrwlock"},
		Old:    "  return (redis.call('HGET', key, 'n') or '0') ~= upto\n",
		New:    "  return false\n",
		Breaks: "a force ends whatever holds when it arrives: a late copy of a ForceUnlock ends a hold taken after it",
	},
	{
		Name: "revert-sem-try-copy", File: "scripts/sem_acquire.lua", Prims: []string{"semaphore"},
		Old: "if done_has(KEYS[5], 'b', req) then\n  return {0, tonumber(h[2])}\nend\n",
		New: "",
		Breaks: "a copy of a TryAcquire that found the permits taken takes them when it lands" +
			" later: permits nobody releases",
	},
	{
		Name: "force-retry-not-recognised", File: "scripts/lib.lua", Prims: []string{"rlock", "rfairlock", "rrwlock"},
		Old: "  if done_has(key, 'f', req) then return 1 end\n  if done_has(key, 'g', req) then return 0 end\n",
		New: "",
		Breaks: "a copy of a force runs again: a retry of a force that found the lock free ends" +
			" read holds taken since, and a retried force reports false",
	},
}
