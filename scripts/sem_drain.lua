-- sem_drain: take every available permit, queue or not.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- Reply: {1, taken}  taken >= 0
--        {-2}        the permits were never set
local h = redis.call('HMGET', KEYS[1], 'k', 'a')
check_keys(h[1])
if not h[1] then
  return {-2}
end
local avail = tonumber(h[2])
if avail <= 0 then
  return {1, 0}
end
redis.call('HSET', KEYS[1], 'a', 0)
return {1, avail}
