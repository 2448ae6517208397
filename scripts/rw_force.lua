-- rw_force: end the write hold and every read hold, whoever holds them,
-- provided the fence has not changed since the caller read it (see
-- fence_moved), tell their Clients, and wake the waiters. Waiting writers
-- keep waiting. A copy of the request replies as its first run did and
-- changes nothing (force_seen). A read hold's token is the fence's last
-- token, which read holds taken after the force would share with the
-- holds it saw unless the fence moves on: every force that passes the
-- check hands out a token, held or free, so that a hold taken after it has
-- a greater token than the holds it told of. Read holds taken between the
-- caller's read and the force share the token it read, and end with it.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] the prefix of a forced holder's Client's channel (tell_forced)
-- ARGV[8] the fence's last token as the caller read it (fence_moved)
-- ARGV[9] the request's id
-- Reply: 1 something was held; 0 the lock was free; 2 it is held, and the
-- fence changed after the caller read it: nothing changed.
local registered = rw_check_keys()
local seen = force_seen(KEYS[6], ARGV[9])
if seen then
  return seen
end
if fence_moved(KEYS[2], ARGV[8]) and
    (redis.call('EXISTS', KEYS[1]) == 1 or redis.call('ZCARD', KEYS[4]) > 0) then
  return 2
end
local w = redis.call('HMGET', KEYS[1], 'o', 't')
local readers = redis.call('ZRANGE', KEYS[4], 0, -1)
local held = redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
local last = redis.call('HGET', KEYS[2], 'n') or '0'
next_token(KEYS[2])
if held == 0 then
  return force_done(KEYS[6], ARGV[9], 0, MARK_TTL)
end
if w[1] then
  tell_forced(PUBLISH, ARGV[7], 'l', w[1], w[2] or '0')
end
for _, owner in ipairs(readers) do
  tell_forced(PUBLISH, ARGV[7], 'r', owner, last)
end
rw_write_released(nil, registered)
return force_done(KEYS[6], ARGV[9], 1, MARK_TTL)
