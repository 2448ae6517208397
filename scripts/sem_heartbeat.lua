-- sem_heartbeat: the watchdog's renewal of a fair waiter's place in the
-- queue.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] heartbeat (ms)
-- Reply: 1 still queued (deadline pushed back), or granted (the grant is
--        kept as long); 0 gone
-- The request id names the wait: a heartbeat of a wait that ended finds
-- no place, and at most keeps the marker of a grant its waiter has not
-- looked at.
local req = ARGV[5]
sem_check_keys(redis.call('HGET', KEYS[1], 'k'))
local deadline = redis.call('ZSCORE', KEYS[3], req)
local now = now_ms()
if deadline and tonumber(deadline) > now then
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[6]), req)
  sem_keep(tonumber(ARGV[6]))
  return 1
end
if done_has(KEYS[5], 'a', req) then
  -- granted, and the waiter has not looked yet: keep the grant for it
  done_mark(KEYS[5], 'a', req, now, math.max(MARK_TTL, tonumber(ARGV[6])))
  return 1
end
return 0
