-- lib.lua: helpers prepended to every script of this package.
--
-- A lock hash (P:{N}:lock) has the fields
--   k  kind of primitive that owns the key ("rlock", "rfairlock", ...)
--   o  owner id          c  hold count       t  fencing token of this hold
--   r  id of the last request applied to this hold (retried requests are no-ops)
--   m  holder metadata (msgpack, opaque here)  a  acquired at, server time in ms
-- A fence hash (P:{N}:fence) has
--   n  the last token handed out (never expires)
-- A release marker (P:{N}:rel:<owner>, a string with a short TTL) holds the
-- id of the owner's last request that released a hold to zero.

-- MAX_COUNT is the largest count of permits a script keeps: 2^53 - 1, the
-- largest integer a Lua number holds exactly.
local MAX_COUNT = 9007199254740991

-- now_ms returns the server's clock in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- check_kind raises WRONGTYPE unless key is absent or a hash written by a
-- primitive of this kind; kind_seen is the key's 'k' field (false if none).
local function check_kind(key, kind_seen, kind)
  if kind_seen == kind then return end
  if kind_seen then
    error('WRONGTYPE ' .. key .. ' holds ' .. kind_seen .. ' data, not ' .. kind)
  end
  if redis.call('EXISTS', key) == 1 then
    error('WRONGTYPE ' .. key .. ' holds data redcoord did not write')
  end
end

-- remaining returns a held key's remaining lease in ms, at least 1: a
-- waiter's hint, where 0 (PTTL rounds down) would read as "unknown" and
-- cost a whole poll interval instead of a millisecond.
local function remaining(key)
  return math.max(1, redis.call('PTTL', key))
end

-- outlive makes key live at least ms more from now; a key without a TTL
-- gets one, an absent key stays absent.
local function outlive(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl == -1 or (pttl >= 0 and pttl < ms) then
    redis.call('PEXPIRE', key, ms)
  end
end

-- notify publishes msg on channel with cmd (PUBLISH, or SPUBLISH on
-- Cluster). It is a hint: a refused command (an ACL) must not fail a script
-- that has written. A server without sharded pub/sub (before 7.0) refuses
-- SPUBLISH, and its subscribers fall back to SUBSCRIBE: PUBLISH reaches them.
local function notify(cmd, channel, msg)
  local r = redis.pcall(cmd, channel, msg)
  if cmd == 'SPUBLISH' and type(r) == 'table' and r.err then
    redis.pcall('PUBLISH', channel, msg)
  end
end
