-- sem_set: set up or resize the semaphore, then serve the queue and wake
-- the waiters that new permits let in.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] "try": set the total to n only if the permits were never set
--         "set": set the total to n; what is held stays held, so
--                available changes by n - the old total
--         "add": add n (which may be negative) to the total and to
--                available; an unset semaphore counts as 0
-- ARGV[6] n (at most MAX_COUNT)
-- ARGV[7] request id: a retry, or a late copy, of an applied request
--         changes nothing and replies as it did (with today's counts)
-- Permits set where none were wake the acquires that wait for them
-- (WithWaitForSet) with "@set " on the semaphore's channel.
-- Reply: {1, total, available}  done
--        {0, total, available}  "try" found the permits set; nothing changed
--        {-1, total}            "add" would make the total negative; nothing changed
--        {-3, total}            "add" would make the total exceed MAX_COUNT; nothing changed
local mode, n, req = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local h = redis.call('HMGET', KEYS[1], 'k', 'a', 't')
local queue_length, registered = sem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
local avail, total = tonumber(h[2]) or 0, tonumber(h[3]) or 0
if done_has(KEYS[5], 's', req) then
  return {1, total, avail}
end
if mode == 'try' and h[1] then
  return {0, total, avail}
end
if mode == 'add' then
  if total + n < 0 then
    return {-1, total}
  elseif total + n > MAX_COUNT then
    return {-3, total}
  end
  avail, total = avail + n, total + n
else
  avail, total = avail + n - total, n
end
redis.call('HSET', KEYS[1], 'k', KIND, 't', total, 'a', avail)
done_mark(KEYS[5], 's', req, now, MARK_TTL)
if not h[1] then
  notify(PUBLISH, CHANNEL, '@set ')
elseif total < tonumber(h[3]) then
  -- A shrink may leave waiters asking for more than the total: wake every
  -- process that has a registered or queued waiter, once, so that those
  -- find out at once rather than at their next poll.
  local told = {}
  tell_clients(redis.call('ZRANGE', KEYS[6], 0, -1), PUBLISH, CHANNEL, told)
  tell_clients(redis.call('LRANGE', KEYS[2], 0, -1), PUBLISH, CHANNEL, told)
end
return {1, total, sem_settle(now, avail, avail - (tonumber(h[2]) or 0), queue_length, registered)}
