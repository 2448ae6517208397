-- sem_leave: undo what the acquire request req did, when its caller gave
-- up: leave the queue or the waiter registry, or give back the permits it
-- took or was granted. Either way a late copy of the request is refused
-- from now on.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n, what it asked for
-- ARGV[7] "1": the request waited through the waiter registry, where its
--         Client is registered (see client_of) by a try of it or of
--         another local waiter (a try's reply may have been lost); if the
--         Client leaves the registry (ARGV[9]) and is not registered, a
--         release woke it since, and the wake goes on to other registered
--         Clients that fit
-- ARGV[8] heartbeat (ms), as the acquire's tries sent it
-- ARGV[9] "0": this was the Client's last blocked acquire of the name,
--         and the Client leaves the registry; "-": the registry is left
--         be (a fair acquire); otherwise the fewest permits the Client's
--         other blocked acquires ask for, which its registration (if any)
--         says from now on
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
local member, last = client_of(req), ARGV[9] == '0'
local unregistered = false
if registered > 0 and last then
  unregistered = sem_unregister(member)
elseif registered > 0 and ARGV[9] ~= '-' then
  redis.call('ZADD', KEYS[7], 'XX', ARGV[9], member)
end
local woken = ARGV[7] == '1' and last and not unregistered
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
