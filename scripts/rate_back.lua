-- rate_back: give back the events of a Wait that ended before its slot,
-- if no take was counted after it: TAT moves back by their cost. Once
-- another take has been counted after it, that take's slot was computed
-- from this one's and is kept; moving TAT back then would give the next
-- take a slot that falls on an existing one, two events where the limit
-- allows one. The events are then left unused instead.
-- KEYS, ARGV[1..7] as in rate_lib.lua
-- ARGV[8] the take's request id
-- ARGV[9] the take's cost (µs), as rate_take replied
-- Reply: 1 given back; 0 left (a take came after it, SetLimit changed the
--        limit since, or the limiter expired)
local req, cost = ARGV[8], tonumber(ARGV[9])
local h = rate_read()
if not h[1] or h[6] ~= req then
  return 0
end
redis.call('HSET', KEYS[1], 't', rate_us(tonumber(h[5]) - cost), 'r', '')
return 1
