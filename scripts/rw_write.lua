-- rw_write: take the write hold for an owner, or re-enter it.
-- KEYS, ARGV[1..4] as in rw_lib.lua
-- ARGV[5] owner   ARGV[6] request id   ARGV[7] lease (ms)
-- ARGV[8] holder metadata   ARGV[9] "1": register as a waiting writer if busy
-- ARGV[10] heartbeat (ms)
-- ARGV[11] token of the write hold the handle has ('0': none)
-- KEYS[7] the owner's leave markers (see mark_left)
-- Reply: {1, token, count}  held: a fresh hold, a re-entry, or a retry
--        {0, wait}          busy: the writer's remaining lease, or the
--                           soonest reader's
--        {-1}               the owner holds a read hold and no write hold:
--                           an upgrade, refused (it could deadlock)
-- The owner re-enters only the write hold the handle knows (its token); an
-- orphan (see lock_acquire) is taken over as a fresh hold, and a request
-- that was left (a late copy) is refused.
check_keys()
local owner, req = ARGV[5], ARGV[6]
local now = now_ms()
purge(now)
local h = redis.call('HMGET', KEYS[1], 'o', 'c', 't', 'r')
if h[1] == owner and h[4] == req then
  return {1, tonumber(h[3]), tonumber(h[2])}
end
if was_left(KEYS[7], req) then
  return {0, h[1] and remaining(KEYS[1]) or 1}
end
if h[1] == owner and h[3] == ARGV[11] then
  local c = redis.call('HINCRBY', KEYS[1], 'c', 1)
  redis.call('HSET', KEYS[1], 'r', req)
  return {1, tonumber(h[3]), c}
end
if h[1] ~= owner then
  if redis.call('HEXISTS', KEYS[3], owner) == 1 then
    return {-1}
  end
  local wait
  if h[1] then
    wait = remaining(KEYS[1])
  else
    wait = first(KEYS[4], now)
  end
  if wait then
    if ARGV[9] == '1' then
      redis.call('ZADD', KEYS[5], now + tonumber(ARGV[10]), owner)
      keep(now)
    end
    return {0, wait}
  end
end
local t = next_token(KEYS[2])
redis.call('HSET', KEYS[1], 'k', KIND, 'o', owner, 'c', 1, 't', t, 'r', req,
  'm', ARGV[8], 'a', now)
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if redis.call('ZREM', KEYS[5], owner) == 1 and redis.call('ZCARD', KEYS[5]) == 0 then
  redis.call('DEL', KEYS[5])
end
return {1, tonumber(t), 1}
