-- rw_state: who holds a read-write lock, and who waits to write.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- Reply: {writer, write count, write token, writer's remaining lease (ms),
--         writer metadata, acquired at (server ms), last token,
--         waiting writers, reader1, count1, remaining1 (ms), value1,
--         reader2, ...}
-- writer is '' when no write hold; expired holds and waiters are not
-- counted. It writes nothing.
rw_check_keys()
local now = now_ms()
local h = redis.call('HMGET', KEYS[1], 'o', 'c', 't', 'm', 'a')
local out = {h[1] or '', tonumber(h[2] or '0'), tonumber(h[3] or '0'),
  math.max(0, redis.call('PTTL', KEYS[1])), h[4] or '', tonumber(h[5] or '0'), rw_token(),
  redis.call('ZCOUNT', KEYS[5], '(' .. now, '+inf')}
local readers = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #readers, 2 do
  local o = readers[i]
  out[#out + 1] = o
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[3], o) or '0')
  out[#out + 1] = tonumber(readers[i + 1]) - now
  out[#out + 1] = redis.call('HGET', KEYS[3], 'v:' .. o) or ''
end
return out
