-- key_types: the type of each key, so that an error can name the key of
-- another type that a script's first command on it refused (Redis's
-- WRONGTYPE error does not name it). It writes nothing.
-- KEYS the keys of the script that failed
-- Reply: one type per key, in order ('none' for a key that does not exist)
local types = {}
for i, key in ipairs(KEYS) do
  types[i] = redis.call('TYPE', key)['ok']
end
return types
