-- xsem_leave: undo what the acquire request ARGV[5] did, when its caller
-- gave up: give back the permit if it was taken. A late copy of the
-- request is refused from now on.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id
-- ARGV[6] "1": a try that registers the request was sent (see
--         xsem_acquire; its reply may have been lost): if the request is
--         not registered, a release woke it, and it passes the wake on to
--         the next registered waiter. The request leaves the registry
--         either way.
-- ARGV[7] heartbeat (ms), as the acquire's tries sent it
-- Reply: 1 the permit was given back; 0 there was none
local id = ARGV[5]
local h = redis.call('HMGET', KEYS[1], 'k', 't')
local registered = xsem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
done_mark(KEYS[5], 'x', id, now, MARK_TTL)
local held = xsem_reclaim(now)
local unregistered = registered > 0 and redis.call('ZREM', KEYS[6], id .. ' ' .. ARGV[7]) == 1 -- as xsem_acquire wrote it
local woken = ARGV[6] == '1' and not unregistered
if redis.call('ZREM', KEYS[2], id) == 0 then
  if woken then
    xsem_wake((tonumber(h[2]) or 0) - held, registered)
  end
  return 0
end
redis.call('HDEL', KEYS[3], id, 'f:' .. id)
xsem_wake((tonumber(h[2]) or 0) - held + 1, registered)
return 1
