-- lock_multi: take the lock hashes of several names, all or none (rlock's
-- MultiMutex); the names are in one Cluster slot, or on one server.
-- ARGV[1..4] as in lib.lua
-- ARGV[5] lease (ms)   ARGV[6] holder metadata   ARGV[7] n
-- For each name i, from 1 to n, in the order given:
--   KEYS[3i-2] its lock hash   KEYS[3i-1] its fence hash
--   KEYS[3i] its Client's request markers (see lib.lua)
--   ARGV[3i+5] its owner   ARGV[3i+6] its request id
--   ARGV[3i+7] the token of the hold the owner's handle has ('0': none)
-- Reply: {1, token_1, ..., token_n}  every name is held by its owner: token_i
--          is the token of a fresh hold of name i, taken now or by an
--          earlier copy of this request (a retry after a lost reply), or
--          0 for a hold the handle had already, which is kept as it is;
--        {0, i, pttl}  nothing was taken: name i, the first such, is held
--          by another owner for pttl more ms, or this request was left,
--          is numbered below the owner's hold's last, or names a hold
--          released to zero since (a late copy: refused; see is_stale,
--          was_ended).
-- A hold of the owner with a token the handle does not know is an orphan
-- (see lock_acquire) and is taken over as a fresh hold. Every key is
-- checked before the first write, so an error leaves them all unchanged.
local n = tonumber(ARGV[7])
local plan = {} -- per name: false to take it, else the token to reply
for i = 1, n do
  local lock, owner, req = KEYS[3 * i - 2], ARGV[3 * i + 5], ARGV[3 * i + 6]
  local h = redis.call('HMGET', lock, 'k', 'o', 't', 'r')
  check_kind(lock, h[1], KIND)
  if h[2] and h[2] ~= owner then
    return {0, i, remaining(lock)}
  end
  if h[2] and h[4] == req then
    plan[i] = tonumber(h[3])
  elseif was_left(KEYS[3 * i], req) or is_stale(h[2], owner, req, h[4])
    or (h[3] ~= ARGV[3 * i + 7] and was_ended(KEYS[3 * i], ARGV[3 * i + 7])) then
    return {0, i, h[2] and remaining(lock) or 1}
  elseif h[2] and h[3] == ARGV[3 * i + 7] then
    plan[i] = 0
  else
    redis.call('HEXISTS', KEYS[3 * i - 1], 'n') -- the fence's type, before any write
    plan[i] = false
  end
end
local now = now_ms()
local out = {1}
for i = 1, n do
  if plan[i] then
    out[i + 1] = plan[i]
  else
    local lock = KEYS[3 * i - 2]
    local token = next_token(KEYS[3 * i - 1])
    redis.call('HSET', lock, 'k', KIND, 'o', ARGV[3 * i + 5], 'c', 1, 'x', 0, 't', token,
      'r', ARGV[3 * i + 6], 'q', ARGV[3 * i + 6], 'm', ARGV[6], 'a', now)
    redis.call('PEXPIRE', lock, ARGV[5])
    out[i + 1] = tonumber(token)
  end
end
return out
