-- sem_leave: undo what the acquire request req did, when its caller gave
-- up: leave the queue, or give back the permits it took or was granted.
-- Either way a late copy of the request is refused from now on.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n, what it asked for
-- ARGV[7] "1": a try of the request registered it in the waiter registry;
--         if a release woke it since (it is no longer registered), the
--         wake goes on to other registered waiters that fit
-- Reply: 1 permits were given back; 0 there was nothing to give back
local req, n = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 'a')
check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
if done_has(KEYS[5], 'x', req) then
  return 0
end
done_mark(KEYS[5], 'x', req, now, MARK_TTL)
local took = done_has(KEYS[5], 'a', req)
local head = live_head(now)
forget(req)
local woken = false
if ARGV[7] == '1' then
  woken = registered == 0 or redis.call('ZREM', KEYS[6], req .. ' ' .. ARGV[6]) == 0 -- as sem_acquire wrote it
end
if not h[1] then
  return 0
end
if took then
  done_unmark(KEYS[5], 'a', req)
  settle(now, tonumber(h[2]) + n, n)
  return 1
end
if head == req then -- the next waiter may fit where this one did not
  settle(now, tonumber(h[2]), 0)
elseif woken then
  wake(tonumber(h[2]), head ~= nil, n)
end
return 0
