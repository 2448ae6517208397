-- rw_unlock: drop one write hold; at zero delete it and wake the waiters.
-- KEYS, ARGV[1..4] as in rw_lib.lua
-- ARGV[5] owner   ARGV[6] request id   ARGV[7] marker lifetime (ms)
-- ARGV[8] "1": drop every hold of the owner at once (see lock_release)
-- Reply: the owner's remaining write holds (0: released); -1 not held.
local owner, req = ARGV[5], ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r')
local readers, writers = check_write_keys(h[1])
if h[2] ~= owner then
  if was_released(KEYS[6], req) then
    return 0
  end
  return -1
end
if h[4] == req then
  return tonumber(h[3])
end
local c = tonumber(h[3]) - 1
if c > 0 and ARGV[8] ~= '1' then
  redis.call('HSET', KEYS[1], 'c', c, 'r', req)
  return c
end
mark_released(KEYS[6], req, ARGV[7])
redis.call('DEL', KEYS[1])
if readers + writers > 0 then
  purge(now_ms())
  writers = nil
end
write_released(writers)
return 0
