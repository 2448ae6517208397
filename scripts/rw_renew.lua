-- rw_renew: the watchdog's renewal of an owner's read hold, or of a waiting
-- writer's heartbeat.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] lease or heartbeat (ms)   ARGV[8] "r" or "w"
-- ARGV[9] "r": the read hold's name (see rw_lib.lua)
-- Reply: 1 renewed; 0 gone (the read hold is lost: its lease ran out, it
--        was released or forced, or the owner's read hold is another one,
--        taken since; the writer no longer waits: it lapsed, left, or took
--        the lock).
-- A renewal names the read hold it was sent for: one that arrives after
-- that hold ended must not renew the owner's next hold, whose lease may be
-- fixed (RLockWithLease) or shorter. A read hold that rw_rextend gave a
-- fixed lease ('x:'<owner>, see is_fixed) is held, and left as it is: this renewal was
-- sent before the extension and arrives after it.
-- A waiting writer's heartbeat names the owner only: a writer has no hold
-- yet, and its entry is the owner's. A heartbeat of an earlier wait that
-- arrives while the owner waits again keeps a waiter that is waiting, for
-- a heartbeat at most; one that arrives when the owner no longer waits
-- finds no entry and writes nothing.
rw_check_keys()
local owner = ARGV[5]
local now = now_ms()
local key = KEYS[4]
if ARGV[8] == 'w' then
  key = KEYS[5]
end
local deadline = redis.call('ZSCORE', key, owner)
if not deadline or tonumber(deadline) <= now then
  return 0
end
if ARGV[8] == 'r' then
  local _, named = rw_read_held(owner, ARGV[9])
  if not named then
    return 0
  end
  if is_fixed(redis.call('HGET', KEYS[3], 'x:' .. owner)) then
    return 1
  end
end
redis.call('ZADD', key, now + tonumber(ARGV[7]), owner)
rw_keep(now)
return 1
