-- latch_count: the latch's count and round. It writes nothing.
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- Reply: {1, count, round, born}  set: count CountDowns are left (0: the
--                                 latch is open); round: the current
--                                 round; born: the round the hash was
--                                 created in (see latch_lib.lua)
--        {-2}                     never set (or deleted, or expired after
--                                 reaching 0)
local h = redis.call('HMGET', KEYS[1], 'k', 'c', 'g', 'b')
latch_check_keys(h[1])
if not h[1] or tonumber(h[2]) < 0 then
  return {-2}
end
return {1, tonumber(h[2]), tonumber(h[3] or '0'), tonumber(h[4] or '0')}
