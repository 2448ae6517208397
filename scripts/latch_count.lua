-- latch_count: the latch's count. It writes nothing.
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- Reply: {1, count}  set: count CountDowns are left (0: the latch is open)
--        {-2}        never set (or deleted, or expired after reaching 0)
local h = redis.call('HMGET', KEYS[1], 'k', 'c')
check_keys(h[1])
if not h[1] then
  return {-2}
end
return {1, tonumber(h[2])}
