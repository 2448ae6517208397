-- sem_acquire: one attempt to take n permits, all or nothing. A fair
-- blocking attempt that fails joins the queue (once) and refreshes its
-- heartbeat.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n (>= 1)
-- ARGV[7] "1": queue if not acquired (a fair Acquire); "r": register the
--         request's Client in the waiter registry (see client_of) if not
--         acquired, or if acquired while other local waiters of the
--         Client remain (ARGV[9]), and unregister it if acquired for its
--         last one (an unfair Acquire woken by pub/sub); "u": unregister
--         the Client even if not acquired (such an Acquire whose wait
--         polls: it could not hear a wake); "p": an unfair Acquire whose
--         wait polls from the start: neither; "0": neither (a
--         TryAcquire). "p" and "0" leave the registry be.
-- ARGV[8] heartbeat (ms): how long the queue entry or registration lives
--         without renewal
-- ARGV[9] with "r": the fewest permits the Client's other blocked
--         acquires of the name ask for; "0": it has none
-- Fair and unfair acquires do not wait on one name at once: a fair
-- Acquire ("1") while a live unfair waiter is registered, or an unfair one
-- ("r", "u", "p") while a live fair waiter is queued, is refused.
-- Reply: {1, available}  acquired (now, by an earlier copy of this request,
--                        or by a grant): available is what is left
--        {0, available}  not acquired: the permits are taken, or a live
--                        queued waiter comes first (a TryAcquire's copy
--                        replies so again, and takes nothing)
--        {-1, total}     n exceeds the total: it could never be acquired
--        {-2}            the permits were never set
--        {-3}            this request was given up (a late copy)
--        {-4, fair}      refused: waiters of the other kind wait (fair
--                        is 1 when they are fair, 0 when unfair); nothing
--                        changed
-- Writes happen only after every check, so an error leaves the keys
-- unchanged.
local req, n = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 'a', 't')
local queue_length, registered = sem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
if done_has(KEYS[5], 'a', req) then
  return {1, tonumber(h[2])}
end
if done_has(KEYS[5], 'x', req) then
  return {-3}
end
if done_has(KEYS[5], 'b', req) then
  return {0, tonumber(h[2])}
end
if not h[1] then
  return {-2}
end
local mode = ARGV[7]
if mode == '1' and registered > 0 and redis.call('ZCOUNT', KEYS[6], '(' .. now, '+inf') > 0 then
  return {-4, 0}
elseif (mode == 'r' or mode == 'u' or mode == 'p') and queue_length > 0
    and redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') > 0 then
  return {-4, 1}
end
local total = tonumber(h[3])
if n > total then
  sem_forget(req)
  return {-1, total}
end
local avail, queued = sem_serve(now, tonumber(h[2]))
local took = done_has(KEYS[5], 'a', req) -- it was this request's turn
if not took and not queued and avail >= n then
  avail = avail - n
  done_mark(KEYS[5], 'a', req, now, MARK_TTL)
  took = true
end
if avail ~= tonumber(h[2]) then
  redis.call('HSET', KEYS[1], 'a', avail)
end
local enqueue = not took and mode == '1'
local member, others = client_of(req), tonumber(ARGV[9]) or 0
if mode == 'r' and (not took or others > 0) then
  -- the fewest the Client still waits for, as sent (Lua's '..' writes
  -- 1e+14 for a large number)
  local least = ARGV[6]
  if took or (others > 0 and others < n) then
    least = ARGV[9]
  end
  sem_register(member, least, tonumber(ARGV[8]))
elseif registered > 0 and (mode == 'u' or (mode == 'r' and took)) then
  sem_unregister(member)
end
if queue_length > 0 and not queued and not enqueue then
  -- The queue's last live waiters were served or found dead just now: the
  -- waiters outside it may take what is left.
  sem_wake(avail, false, avail, registered)
end
if took then
  return {1, avail}
end
if enqueue then
  if not redis.call('ZSCORE', KEYS[3], req) then
    queue_join(KEYS[2], KEYS[4], req, now, ARGV[6])
  end
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[8]), req)
  sem_keep(tonumber(ARGV[8]))
elseif mode == '0' then
  -- A TryAcquire that found the permits taken is over: a copy of it that
  -- lands later (a go-redis retry whose first try was held) must not take
  -- permits nobody would release. It replies as this run did.
  done_mark(KEYS[5], 'b', req, now, MARK_TTL)
end
return {0, avail}
