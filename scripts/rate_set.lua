-- rate_set: SetLimit. Store the limit (ARGV[5..7]) for every handle, and
-- keep the state: the events counted and not yet drained (TAT ahead of
-- now, in intervals of the old limit) stay counted, in intervals of the
-- new one, so that a change admits no burst of its own. Takes already
-- counted keep their slots; a give-back after the change is refused.
-- KEYS, ARGV[1..7] as in rate_lib.lua
-- Reply: 1
local h, events, per = rate_read()
local now = rate_now()
local e, p = tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = math.max(tonumber(h[5] or '0'), now)
if tat > now then
  tat = now + math.ceil((tat - now) * events / per * p / e)
end
redis.call('HSET', KEYS[1], 'k', KIND, 'e', ARGV[5], 'p', ARGV[6], 'b', ARGV[7], 't', rate_us(tat), 'r', '', 's', 1)
rate_expire(tat, now, p, true)
return 1
