-- elect_proclaim: the leader says a new value, without a new term.
-- KEYS, ARGV[1..5] as in fair_lib.lua and elect_lib.lua
-- ARGV[6] the leader's term   ARGV[7] the new value
-- ARGV[8] request id, kept as the term's last Proclaim (field p)
-- Reply: 1 the owner leads in that term (its value is now ARGV[7]; a value
--          it already had is not logged again, and a retry, or a late copy
--          of a Proclaim numbered below the term's last, changes nothing:
--          see request_seen);
--        0 it does not: the term ended.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't', 'm', 'a', 'p')
check_kind(KEYS[1], h[1], KIND)
redis.call('XLEN', ELECT_LOG) -- its type, before the first write
if not is_named(h[2], h[3], ARGV[5], ARGV[6]) then
  return 0
end
if request_seen(h[6], ARGV[8]) then
  return 1
end
redis.call('HSET', KEYS[1], 'p', ARGV[8])
if h[4] ~= ARGV[7] then
  redis.call('HSET', KEYS[1], 'm', ARGV[7])
  elect_log_leader(h[3], ARGV[7], h[5])
end
return 1
