-- sem_leave: undo what the acquire request req did, when its caller gave
-- up: leave the queue or the waiter registry, or give back the permits it
-- took or was granted. Either way a late copy of the request is refused
-- from now on.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n, what it asked for
-- ARGV[7] "1": a try that registers the request in the waiter registry
--         was sent (its reply may have been lost); if the request is not
--         registered, a release woke it since, and the wake goes on to
--         other registered waiters that fit
-- ARGV[8] heartbeat (ms), as the acquire's tries sent it
-- Reply: 1 permits were given back; 0 there was nothing to give back
local req, n = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 'a')
local queue_length, registered = sem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
if done_has(KEYS[5], 'x', req) then
  return 0
end
done_mark(KEYS[5], 'x', req, now, MARK_TTL)
local took = done_has(KEYS[5], 'a', req)
local head = sem_live_head(now)
sem_forget(req)
local unregistered = registered > 0 and sem_unregister(req .. ' ' .. ARGV[6] .. ' ' .. ARGV[8]) -- as sem_acquire wrote it
local woken = ARGV[7] == '1' and not unregistered
if not h[1] then
  return 0
end
if took then
  done_unmark(KEYS[5], 'a', req)
  sem_settle(now, tonumber(h[2]) + n, n, queue_length, registered)
  return 1
end
if head == req then -- the next waiter may fit where this one did not
  sem_settle(now, tonumber(h[2]), 0, queue_length, registered)
elseif woken then
  sem_wake(tonumber(h[2]), head ~= nil, n, registered)
end
return 0
