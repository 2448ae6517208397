-- xsem_set: set up or resize the semaphore, and wake the waiters that new
-- permits let in.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] "try": set the total to n only if the permits were never set
--         "set": set the total to n (permits held stay held)
--         "add": add n (which may be negative) to the total; an unset
--                semaphore counts as 0
-- ARGV[6] n (at most MAX_COUNT)
-- ARGV[7] request id: a retry, or a late copy, of an applied request
--         changes nothing and replies as it did (with today's counts)
-- Reply: {1, total, free}  done
--        {0, total, free}  "try" found the permits set; nothing changed
--        {-1, total}       "add" would make the total negative; nothing changed
--        {-3, total}       "add" would make the total exceed MAX_COUNT; nothing changed
local mode, n, req = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local h = redis.call('HMGET', KEYS[1], 'k', 't')
local registered = xsem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
local total = tonumber(h[2]) or 0
local held = xsem_reclaim(now)
if done_has(KEYS[5], 's', req) then
  return {1, total, total - held}
end
if mode == 'try' and h[1] then
  return {0, total, total - held}
end
if mode == 'add' then
  if total + n < 0 then
    return {-1, total}
  elseif total + n > MAX_COUNT then
    return {-3, total}
  end
  total = total + n
else
  total = n
end
redis.call('HSET', KEYS[1], 'k', KIND, 't', total)
done_mark(KEYS[5], 's', req, now, MARK_TTL)
if not h[1] then
  notify(PUBLISH, CHANNEL, '@set ') -- the acquires that wait for permits to be set
elseif total == 0 then
  -- waiters can never succeed now: wake them all to find out at once
  wake_all(KEYS[6], registered, PUBLISH, CHANNEL)
end
xsem_wake(total - held, total - held, registered)
return {1, total, total - held}
