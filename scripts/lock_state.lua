-- lock_state: who holds a lock hash.
-- KEYS[1] lock hash
-- ARGV[1..4] as in lib.lua
-- Reply: {} free; {owner, count, token, metadata, acquired at (ms), pttl (ms)}
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 't', 'm', 'a')
check_kind(KEYS[1], h[1], KIND)
if not h[2] then
  return {}
end
return {h[2], tonumber(h[3]), tonumber(h[4]), h[5] or '', tonumber(h[6]) or 0,
  redis.call('PTTL', KEYS[1])}
