-- fair_heartbeat: the watchdog's renewal of a waiting request's heartbeat.
-- It also hands on a lock whose holder's lease ran out without release.
-- KEYS, ARGV[1..5] as in fair_lib.lua
-- ARGV[6] request id   ARGV[7] heartbeat (ms)
-- Reply: 1 the request waits (deadline renewed) or was granted the lock;
--        0 it is gone from the queue (it lapsed or left).
-- The request id names the wait: a heartbeat of a wait that ended finds
-- no place in the queue, and renews no hold (the watchdog renews a hold
-- with lock_renew, by its token).
local req = ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'r')
local queued = fair_check_keys(h[1], true)
local now = now_ms()
if not h[2] then -- its holder's lease ran out
  fair_check_fence(queued)
  fair_hand_on(now)
  h[3] = redis.call('HGET', KEYS[1], 'r')
end
if redis.call('ZSCORE', KEYS[4], req) then
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[7]), req)
  fair_keep(tonumber(ARGV[7]))
  return 1
end
if h[3] == req then
  return 1
end
return 0
