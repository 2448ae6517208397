-- rw_runlock: drop one read hold; the last reader's release wakes a writer.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id
-- ARGV[8] "1": drop every hold of the owner at once (see lock_release)
-- Reply: the owner's remaining read holds (0: released); -1 not held.
local registered = rw_check_keys()
local owner, req = ARGV[5], ARGV[7]
registered = rw_purge(now_ms(), registered)
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
mark_released(KEYS[6], req, MARK_TTL)
rw_drop_reader(owner, registered)
return 0
