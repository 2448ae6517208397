//go:build mutants

package main

// rwSemMutants are bugs in the guards of the read-write lock's and the
// semaphores' scripts.
var rwSemMutants = []mutant{
	// rw_*
	{
		Name: "rw-read-ignores-writer", File: "scripts/rw_read.lua", Prims: []string{"rrwlock"},
		Old:    "if writer and writer ~= owner then",
		New:    "if false and writer ~= owner then",
		Breaks: "a read hold is taken while another owner holds the write hold",
	},
	{
		Name: "rw-write-ignores-readers", File: "scripts/rw_write.lua", Prims: []string{"rrwlock"},
		Old:    "  elseif readers > 0 then\n    wait = rw_first(KEYS[4], now)",
		New:    "  elseif false then\n    wait = rw_first(KEYS[4], now)",
		Breaks: "the write hold is taken while live read holds remain",
	},
	{
		Name: "rw-unlock-owner-only", File: "scripts/rw_unlock.lua", Prims: []string{"rrwlock"},
		Old: "local mine = is_named(h[2], h[5], ARGV[5], ARGV[9])",
		New: "local mine = h[2] == ARGV[5]",
		Breaks: "write release matches the owner only, not owner+token: a late release of a lost write hold drops the" +
			" owner's next one",
	},
	{
		Name: "rw-runlock-retry-applied-twice", File: "scripts/rw_runlock.lua", Prims: []string{"rrwlock"},
		Old:    "local last = redis.call('HGET', KEYS[3], 'r:' .. owner)",
		New:    "local last = redis.call('HGET', KEYS[3], 'r:' .. owner)\nif last == req then\n  last = false\nend",
		Breaks: "request-id check skipped on read release: a retried RUnlock drops a second read hold of a re-entered reader",
	},
	{
		Name: "rw-read-takeover-keeps-lease", File: "scripts/rw_read.lua", Prims: []string{"rrwlock"},
		Old: "redis.call('ZADD', KEYS[4], now + tonumber(ARGV[8]), owner)",
		New: "if not c then\n  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[8]), owner)\nend",
		Breaks: "lease refresh skipped when a read hold of the owner is taken over as a fresh hold: it keeps the orphan's" +
			" old deadline and may lapse while the handle counts a full lease",
	},
	{
		Name: "rw-leave-keeps-waiting-writer", File: "scripts/rw_leave.lua", Prims: []string{"rrwlock"},
		Old: "  rw_drop_writer(owner)\n  if ARGV[9] ~= '1' then",
		New: "  if ARGV[9] ~= '1' then",
		Breaks: "a waiting writer not removed on leave: it holds new readers back (writer preference) until its heartbeat" +
			" lapses",
	},
	{
		Name: "rw-write-release-no-reader-wake", File: "scripts/rw_lib.lua", Prims: []string{"rrwlock"},
		Old:    "then\n    rw_hint(CHANNEL, '*')\n  end\n  return msg",
		New:    "then\n  end\n  return msg",
		Breaks: "a wake not published on write release: readers blocked by the writer are not told, and wait for their poll",
	},
	// sem_*
	{
		Name: "sem-acquire-off-by-one", File: "scripts/sem_acquire.lua", Prims: []string{"semaphore"},
		Old:    "if not took and not queued and avail >= n then",
		New:    "if not took and not queued and avail >= n - 1 then",
		Breaks: "a permit count off by one: an acquire of n takes them when only n-1 are available",
	},
	{
		Name: "sem-acquire-left-unchecked", File: "scripts/sem_acquire.lua", Prims: []string{"semaphore"},
		Old:    "if done_has(KEYS[5], 'x', req) then\n  return {-3}",
		New:    "if false then\n  return {-3}",
		Breaks: "request-id (left marker) check skipped: a late copy of a given-up acquire takes permits nobody will release",
	},
	{
		Name: "sem-release-retry-applied-twice", File: "scripts/sem_release.lua", Prims: []string{"semaphore"},
		Old:    "if done_has(KEYS[5], 'r', req) then",
		New:    "if false and done_has(KEYS[5], 'r', req) then",
		Breaks: "request-id (release marker) check skipped: a retried Release returns its permits twice",
	},
	{
		Name: "sem-wake-not-published", File: "scripts/sem_lib.lua", Prims: []string{"semaphore"},
		Old: "    notify(PUBLISH, client_channel(CHANNEL, w[1]), 'n:' .. string.format('%.0f', w[2]))",
		New: "    -- notify(PUBLISH, client_channel(CHANNEL, w[1]), 'n:' .. string.format('%.0f', w[2]))",
		Breaks: "a wake not published: a release unregisters the Clients it wakes without telling them; they wait for" +
			" their poll",
	},
	{
		Name: "sem-serve-over-grant", File: "scripts/sem_lib.lua", Prims: []string{"semaphore"},
		Old: "    elseif n > avail then\n      return avail, true",
		New: "    elseif n > avail + 1 then\n      return avail, true",
		Breaks: "a permit count off by one in the fair queue: a queued waiter is granted n permits when n-1 are" +
			" available (WithFair semaphores only)",
	},
	// xsem_*
	{
		Name: "xsem-acquire-off-by-one", File: "scripts/xsem_acquire.lua", Prims: []string{"xsemaphore"},
		Old:    "if held >= total then",
		New:    "if held > total then",
		Breaks: "a permit count off by one: a permit is handed out when all are held (total+1 holders)",
	},
	{
		Name: "xsem-extend-renews-fixed", File: "scripts/xsem_extend.lua", Prims: []string{"xsemaphore"},
		Old:    "elseif is_fixed(mark) then\n  return 1",
		New:    "elseif false then\n  return 1",
		Breaks: "a watchdog renewal sent before Extend and landing after it replaces the fixed lease with a TTL one",
	},
	{
		Name: "xsem-release-no-wake", File: "scripts/xsem_release.lua", Prims: []string{"xsemaphore"},
		Old:    "return {1, free, xsem_wake(free, 1, registered, ARGV[7])}",
		New:    "return {1, free, 0}",
		Breaks: "a wake not published on release: registered Clients are not told a permit is free, and wait for their poll",
	},
	{
		Name: "xsem-leave-keeps-registration", File: "scripts/xsem_leave.lua", Prims: []string{"xsemaphore"},
		Old: "local unregistered = last and registered > 0 and redis.call('ZREM', KEYS[6], client_of(id)) == 1",
		New: "local unregistered = last and registered > 0",
		Breaks: "a registration not removed on leave: the Client's last acquire gives up but stays registered, and" +
			" releases spend their wakes on it",
	},
}
