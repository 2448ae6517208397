-- rw_force: end the write hold and every read hold, whoever holds them,
-- provided no token was handed out since the caller read the fence (see
-- fence_moved), tell their Clients, and wake the waiters. Waiting writers
-- keep waiting. A read hold's token is the fence's last token, which the
-- read holds taken after a forced hold would share unless the fence moves
-- on: a force that ends anything hands out a token, so that a hold taken
-- after it has a greater token than the holds it told of, and a late copy
-- of the force finds the fence moved. Read holds taken between the
-- caller's read and the force share the token it read, and end with it.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] the prefix of a forced holder's Client's channel (tell_forced)
-- ARGV[8] the fence's last token as the caller read it (fence_moved)
-- Reply: 1 something was held; 0 the lock was free; 2 it is held, and a
-- token was handed out after the caller read the fence: nothing changed.
local registered = rw_check_keys()
if fence_moved(KEYS[2], ARGV[8]) and
    (redis.call('EXISTS', KEYS[1]) == 1 or redis.call('ZCARD', KEYS[4]) > 0) then
  return 2
end
local w = redis.call('HMGET', KEYS[1], 'o', 't')
local readers = redis.call('ZRANGE', KEYS[4], 0, -1)
local held = redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
if held == 0 then
  return 0
end
local last = redis.call('HGET', KEYS[2], 'n') or '0'
next_token(KEYS[2])
if w[1] then
  tell_forced(PUBLISH, ARGV[7], 'l', w[1], w[2] or '0')
end
for _, owner in ipairs(readers) do
  tell_forced(PUBLISH, ARGV[7], 'r', owner, last)
end
rw_write_released(nil, registered)
return 1
