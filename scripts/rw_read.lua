-- rw_read: take a read hold for an owner, or re-enter it.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id   ARGV[8] lease (ms)
-- ARGV[9] "1": the handle has a read hold; "0": none
-- ARGV[10] the handle's value (WithValue), stored with a fresh hold as
--         'v:'<owner>; "" none
-- Reply: {1, token, count}  held: a fresh hold, a re-entry, or a retry of an
--                           applied request; token is the last write's
--        {0, wait}          a writer holds the lock for wait more ms, or a
--                           writer waits (writer preference) and its
--                           heartbeat runs wait more ms; or refused (below)
-- A handle that holds a read hold re-enters even while writers wait, and so
-- does the writer itself (a downgrade), so neither can deadlock itself.
-- A read hold of the owner that the handle does not know is an orphan (see
-- lock_acquire): it is taken over as a fresh hold (count 1, a new lease). A
-- request that was left, or is numbered below the owner's read hold's last
-- (a late copy; is_stale), is refused: {0, 1}. A fresh hold is named
-- by req ('h:'<owner>), which the requests that change it send.
local registered = rw_check_keys()
redis.call('ZCARD', KEYS[6]) -- its type (see mark_left), before rw_purge writes
local owner, req = ARGV[5], ARGV[7]
local now = now_ms()
rw_purge(now, registered)
local c = redis.call('HGET', KEYS[3], owner)
local last = c and redis.call('HGET', KEYS[3], 'r:' .. owner)
if last == req then
  return {1, rw_token(), tonumber(c)}
end
if was_left(KEYS[6], req) or is_stale(owner, owner, req, last) then
  return {0, 1}
end
if c and ARGV[9] == '1' then
  c = redis.call('HINCRBY', KEYS[3], owner, 1)
  redis.call('HSET', KEYS[3], 'r:' .. owner, req)
  return {1, rw_token(), tonumber(c)}
end
if not c then
  local writer = redis.call('HGET', KEYS[1], 'o')
  if writer and writer ~= owner then
    return {0, remaining(KEYS[1])}
  end
  if not writer then
    local wait = rw_first(KEYS[5], now)
    if wait then
      return {0, wait}
    end
  end
end
if c then
  redis.call('HDEL', KEYS[3], 'x:' .. owner, 'v:' .. owner) -- an orphan's
end
redis.call('HSET', KEYS[3], 'k', KIND, owner, 1, 'h:' .. owner, req, 'r:' .. owner, req)
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[3], 'v:' .. owner, ARGV[10])
end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[8]), owner)
rw_keep(now)
return {1, rw_token(true), 1}
