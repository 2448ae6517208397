-- xsem_state: read the semaphore; writes nothing.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- Reply: {set, total, held}: set is 1 once the permits were set; held
--        counts the permits whose lease has not ended
local h = redis.call('HMGET', KEYS[1], 'k', 't')
xsem_check_keys(h[1])
local held = redis.call('ZCOUNT', KEYS[2], '(' .. now_ms(), '+inf')
if not h[1] then
  return {0, 0, held}
end
return {1, tonumber(h[2]), held}
