-- Dead: list the oldest dead letters, read only.
-- KEYS[1]: dead (zset)   KEYS[2]: causes (hash)   KEYS[3]: attempts (hash)
-- ARGV[1]: max, at most BatchMax
-- Returns {id, died ms, cause, attempts} per dead letter, oldest first.
local entries = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
local out = {}
for i = 1, #entries, 2 do
  local id = entries[i]
  out[#out + 1] = id
  out[#out + 1] = tonumber(entries[i + 1])
  out[#out + 1] = redis.call('HGET', KEYS[2], id) or ''
  out[#out + 1] = tonumber(string.match(redis.call('HGET', KEYS[3], id) or '', '^%d+')) or 0
end
return out
