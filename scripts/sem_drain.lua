-- sem_drain: take every available permit, queue or not.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- KEYS[8] the request's reply: a string, the number of permits it took,
--         which lives MARK_TTL ms. A retry, or a late copy, of a request
--         that took permits finds it, takes nothing and replies as it did.
-- Reply: {1, taken}  taken >= 0
--        {-2}        the permits were never set
local h = redis.call('HMGET', KEYS[1], 'k', 'a')
sem_check_keys(h[1])
local taken = redis.call('GET', KEYS[8])
if taken then
  return {1, tonumber(taken)}
end
if not h[1] then
  return {-2}
end
local avail = tonumber(h[2])
if avail <= 0 then
  return {1, 0}
end
redis.call('HSET', KEYS[1], 'a', 0)
redis.call('SET', KEYS[8], avail, 'PX', MARK_TTL)
return {1, avail}
