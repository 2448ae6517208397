-- rw_renew: the watchdog's renewal of an owner's read hold, or of a waiting
-- writer's heartbeat.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] lease or heartbeat (ms)   ARGV[8] "r" or "w"
-- ARGV[9] the waiting writer's request ("w"): its entry in the wake
--         registry is renewed too, if a release has not woken it
-- Reply: 1 renewed; 0 gone (the read hold is lost; the writer no longer
--        waits: it lapsed, left, or took the lock).
-- A read hold that rw_rextend gave a fixed lease ('x:'<owner>) is held,
-- and left as it is: this renewal was sent before the extension and
-- arrives after it.
local registered = rw_check_keys()
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
if ARGV[8] == 'r' and redis.call('HGET', KEYS[3], 'x:' .. owner) then
  return 1
end
redis.call('ZADD', key, now + tonumber(ARGV[7]), owner)
rw_keep(now)
if ARGV[8] == 'w' and registered > 0 and redis.call('ZSCORE', KEYS[7], ARGV[9]) then
  register(KEYS[7], ARGV[9], tonumber(ARGV[7]))
end
return 1
