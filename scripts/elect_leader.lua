-- elect_leader: who leads, and where the log ends.
-- KEYS[1] lock hash   KEYS[2] the log (see elect_lib.lua)
-- ARGV[1..5] as in fair_lib.lua
-- Reply: {last log entry id ('0-0': none), term, value, since (server ms),
--         remaining lease (ms)}, or {last log entry id} when nobody leads.
-- Both come from one moment: an observer that starts from them receives
-- every later change once.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't', 'm', 'a')
check_kind(KEYS[1], h[1], KIND)
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
local id = last and last[1] or '0-0'
if not h[2] then
  return {id}
end
return {id, h[3], h[4] or '', tonumber(h[5]) or 0, redis.call('PTTL', KEYS[1])}
