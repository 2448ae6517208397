-- sem_leave: undo what the acquire request req did, when its caller gave
-- up: leave the queue, or give back the permits it took or was granted.
-- Either way a late copy of the request is refused from now on.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n, what it asked for
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
if not h[1] then
  return 0
end
if took then
  done_unmark(KEYS[5], 'a', req)
  settle(now, tonumber(h[2]) + n)
  return 1
end
if head == req then -- the next waiter may fit where this one did not
  settle(now, tonumber(h[2]))
end
return 0
