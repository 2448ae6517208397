-- sem_leave: undo what the acquire request req did, when its caller gave
-- up: leave the queue or the waiter registry, or give back the permits it
-- took or was granted. Either way a late copy of the request is refused
-- from now on.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n, what it asked for
-- ARGV[7] "1": the request waited through the waiter registry, where its
--         Client is registered (see client_of) by a try of it or of
--         another local waiter (a try's reply may have been lost); if the
--         Client is not registered, a release woke it since, and the
--         request may have been the one woken: the wake goes on (see
--         below)
-- ARGV[8] heartbeat (ms), as the acquire's tries sent it
-- ARGV[9] "0": this was the Client's last blocked acquire of the name,
--         and the Client leaves the registry; "-": the registry is left
--         be (a fair acquire); otherwise the fewest permits the Client's
--         other blocked acquires ask for, which its registration (if any)
--         says from now on
-- A wake that the Client got and this request gives up stays with the
-- Client when its other blocked acquires' fewest (ARGV[9]) fits in what
-- is available: the reply tells the Client to wake those that fit, as
-- "n:K" would. Otherwise it goes on to the other registered Clients that
-- fit, up to n permits' worth (see sem_wake in sem_lib.lua).
-- Reply: {given, kept}: given is 1 when permits were given back, 0 when
--        there was nothing to give back; kept > 0 when the Client keeps
--        the wake: the permits available, which its waiters that fit are
--        to try for (0: it keeps none)
local req, n = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 'a')
local queue_length, registered = sem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
if done_has(KEYS[5], 'x', req) then
  return {0, 0}
end
done_mark(KEYS[5], 'x', req, now, MARK_TTL)
local took = done_has(KEYS[5], 'a', req)
local head = sem_live_head(now)
sem_forget(req)
local member, last = client_of(req), ARGV[9] == '0'
local listed = registered > 0 and redis.call('ZSCORE', KEYS[6], member)
if listed and last then
  sem_unregister(member)
elseif listed and ARGV[9] ~= '-' then
  redis.call('ZADD', KEYS[7], 'XX', ARGV[9], member)
end
-- a release took the Client out of the registry to wake it, and no try
-- of its registered it again since
local woken = ARGV[7] == '1' and not listed
if not h[1] then
  return {0, 0}
end
if took then
  done_unmark(KEYS[5], 'a', req)
  sem_settle(now, tonumber(h[2]) + n, n, queue_length, registered)
  return {1, 0}
end
local avail = tonumber(h[2])
if head == req then -- the next waiter may fit where this one did not
  sem_settle(now, avail, 0, queue_length, registered)
elseif woken then
  local others = tonumber(ARGV[9]) or 0
  if others > 0 and others <= avail then
    return {0, avail}
  end
  sem_wake(avail, head ~= nil, n, registered)
end
return {0, 0}
