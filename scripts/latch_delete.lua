-- latch_delete: delete the latch and its request markers. Waiters are woken
-- ('*') to find it gone.
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- Reply: 1 the latch existed; 0 it did not
local h = redis.call('HMGET', KEYS[1], 'k', 'c')
check_keys(h[1])
if not h[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
if tonumber(h[2]) > 0 then
  notify(PUBLISH, CHANNEL, '*')
end
return 1
