-- rw_force: end the write hold and every read hold, whoever holds them,
-- tell their Clients, and wake the waiters. Waiting writers keep waiting.
-- A read hold's token is the fence's last token, which a forced read hold
-- shares with the read holds taken after it unless the fence moves on:
-- forcing read holds hands out a token, so that a read hold taken after
-- the force has a greater token than the holds the force told of.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] the prefix of a forced holder's Client's channel (tell_forced)
-- Reply: 1 something was held; 0 the lock was free.
local registered = rw_check_keys()
local w = redis.call('HMGET', KEYS[1], 'o', 't')
local readers = redis.call('ZRANGE', KEYS[4], 0, -1)
local held = redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
if held == 0 then
  return 0
end
if w[1] then
  tell_forced(PUBLISH, ARGV[7], 'l', w[1], w[2] or '0')
end
if #readers > 0 then
  local last = redis.call('HGET', KEYS[2], 'n') or '0'
  next_token(KEYS[2])
  for _, owner in ipairs(readers) do
    tell_forced(PUBLISH, ARGV[7], 'r', owner, last)
  end
end
rw_write_released(nil, registered)
return 1
