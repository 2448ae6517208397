-- latch_down: CountDown: count the latch down by one. The CountDown that
-- brings it to 0 wakes every waiter, with one message on the latch's
-- channel, which each process with waiters hears once: "@open <round>",
-- delivered to every waiter (they wait with the id "open", see To in
-- internal/hub), which tells a waiter of that round that it opened without
-- another look. It starts the spent latch's TTL (field s).
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- ARGV[6] request id
-- Reply: {1, count}  counted (now, or by an earlier copy of this request);
--                    count: what is left
--        {0, 0}      the latch was at 0 already: nothing to count
--        {-2}        the latch was never set (or was deleted, or expired
--                    after reaching 0)
local req = ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'c', 's', 'g')
latch_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[2], now)
if done_has(KEYS[2], 'd', req) then
  return {1, math.max(0, tonumber(h[2] or '0'))}
end
if not h[1] or tonumber(h[2]) < 0 then
  return {-2}
end
if tonumber(h[2]) <= 0 then
  return {0, 0}
end
local c = redis.call('HINCRBY', KEYS[1], 'c', -1)
done_mark(KEYS[2], 'd', req, now, MARK_TTL)
if c == 0 then
  redis.call('PEXPIRE', KEYS[1], h[3] or SPENT_TTL)
  notify(PUBLISH, CHANNEL, '@open ' .. (h[4] or '0'))
end
return {1, c}
