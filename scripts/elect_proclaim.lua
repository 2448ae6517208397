-- elect_proclaim: the leader says a new value, without a new term.
-- KEYS, ARGV[1..3] as in fair_lib.lua and elect_lib.lua
-- ARGV[4] owner   ARGV[5] the leader's term   ARGV[6] the new value
-- Reply: 1 the owner leads in that term (its value is now ARGV[6]; a value
--          it already had is not logged again, so a retry changes nothing);
--        0 it does not: the term ended.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't', 'm', 'a')
check_kind(KEYS[1], h[1], KIND)
check_more()
if h[2] ~= ARGV[4] or h[3] ~= ARGV[5] then
  return 0
end
if h[4] ~= ARGV[6] then
  redis.call('HSET', KEYS[1], 'm', ARGV[6])
  log_leader(h[3], ARGV[6], h[5])
end
return 1
