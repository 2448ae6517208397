-- rate_state: read the limit in effect and what is left of the burst.
-- KEYS, ARGV[1..7] as in rate_lib.lua
-- Reply: {stored, events, period, burst, left}  stored: 1 if the hash
--        holds a limit, 0 if the caller's would apply
local h, events, per, burst = rate_read()
local now = rate_now()
local tat = tonumber(h[5] or '0')
local stored = 0
if h[1] then stored = 1 end
return {stored, events, per, burst, rate_left(tat, now, events, per, burst)}
