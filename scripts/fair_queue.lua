-- fair_queue: how many requests wait, and where an owner's first one is.
-- KEYS, ARGV[1..5] as in fair_lib.lua (ARGV[5]: the owner asking)
-- Reply: {live waiters, 1-based position of the owner's first live request
-- among the live ones (0: the owner does not wait)}. It writes nothing: dead
-- entries are skipped here and purged by the next script that writes.
local queued = fair_check_keys(redis.call('HGET', KEYS[1], 'k'), true)
local now = now_ms()
local n = redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf')
local pos = 0
for _, req in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  local deadline = redis.call('ZSCORE', KEYS[4], req)
  if deadline and tonumber(deadline) > now then
    pos = pos + 1
    if fair_owner_of(req) == ARGV[5] then
      return {n, pos}
    end
  end
end
return {n, 0}
