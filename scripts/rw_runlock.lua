-- rw_runlock: drop one read hold; the last reader's release wakes a writer.
-- KEYS, ARGV[1..4] as in rw_lib.lua
-- ARGV[5] owner   ARGV[6] request id   ARGV[7] marker lifetime (ms)
-- ARGV[8] "1": drop every hold of the owner at once (see lock_release)
-- Reply: the owner's remaining read holds (0: released); -1 not held.
check_keys()
local owner, req = ARGV[5], ARGV[6]
purge(now_ms())
local c = redis.call('HGET', KEYS[3], owner)
if not c then
  if was_released(KEYS[6], req) then
    return 0
  end
  return -1
end
if redis.call('HGET', KEYS[3], 'r:' .. owner) == req then
  return tonumber(c)
end
c = tonumber(c) - 1
if c > 0 and ARGV[8] ~= '1' then
  redis.call('HSET', KEYS[3], owner, c, 'r:' .. owner, req)
  return c
end
mark_released(KEYS[6], req, ARGV[7])
drop_reader(owner)
return 0
