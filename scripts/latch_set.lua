-- latch_set: TrySetCount: set the latch's count to n, if it was never set
-- or is at 0 (a spent latch starts a new round).
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- ARGV[6] request id   ARGV[7] n (>= 1)
-- A count set wakes every waiter with "@open set" on the latch's channel:
-- those that wait for a latch to be set (WithWaitForSet) look again.
-- Reply: {1, n}      set (now, or by an earlier copy of this request)
--        {0, count}  the latch counts already: count CountDowns are left
local req = ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'c', 'g', 'b')
latch_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[2], now)
if done_has(KEYS[2], 's', req) then
  return {1, tonumber(ARGV[7])}
end
local c = tonumber(h[2] or '0')
if h[1] and c > 0 then
  return {0, c}
end
local t = server_time()
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local g = string.format('%.0f', math.max(tonumber(h[3] or '0') + 1, us))
local born = g -- a new latch, or one set again after a Delete (c = -1)
if h[1] and c == 0 then
  born = h[4] or g
end
redis.call('HSET', KEYS[1], 'k', KIND, 'c', ARGV[7], 'g', g, 'b', born, 's', SPENT_TTL)
redis.call('PERSIST', KEYS[1])
done_mark(KEYS[2], 's', req, now, MARK_TTL)
notify(PUBLISH, CHANNEL, '@open set')
return {1, tonumber(ARGV[7])}
