-- PurgeDead: delete the oldest dead letters and everything kept about them.
-- KEYS[1]: dead (zset)     KEYS[2]: values (hash)   KEYS[3]: attempts (hash)
-- KEYS[4]: causes (hash)   KEYS[5]: ready (hash)    KEYS[6]: waiting (hash)
-- KEYS[7]: limits (hash)   KEYS[8]: lanes (hash, see lanes.lua)
-- ARGV[1]: max, at most BatchMax
-- Returns how many it deleted.
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], unpack(ids))
for i = 2, 8 do
  redis.call('HDEL', KEYS[i], unpack(ids))
end
return #ids
