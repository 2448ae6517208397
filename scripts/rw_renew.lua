-- rw_renew: the watchdog's renewal of an owner's read hold, or of a waiting
-- writer's heartbeat.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] lease or heartbeat (ms)   ARGV[8] "r" or "w"
-- Reply: 1 renewed; 0 gone (the read hold is lost; the writer no longer
--        waits: it lapsed, left, or took the lock).
-- A read hold that rw_rextend gave a fixed lease ('x:'<owner>) is held,
-- and left as it is: this renewal was sent before the extension and
-- arrives after it.
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
if ARGV[8] == 'r' and redis.call('HGET', KEYS[3], 'x:' .. owner) then
  return 1
end
redis.call('ZADD', key, now + tonumber(ARGV[7]), owner)
rw_keep(now)
return 1
