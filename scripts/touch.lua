-- touch: a write that changes nothing, for a WAIT to cover. Redis
-- propagates a script's writes to the replicas, and an HSET even when the
-- value is unchanged, while a script that only reads propagates nothing;
-- WAIT waits for the replicas to reach the connection's last propagated
-- write, so after touch it covers every earlier write to the stream,
-- whoever made it (a grant written by another client's script).
-- KEYS[1] a hash
-- ARGV[1] field   ARGV[2] value
-- Reply: 1 the field held the value, and was written again; 0 it did not
-- (nothing was written).
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
