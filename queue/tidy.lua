-- Tidy: hand back expired leases, the longest expired first.
-- KEYS[1]: leases (zset)     KEYS[2]: tokens (hash)   KEYS[3]: attempts (hash)
-- KEYS[4]: pending (list)    KEYS[5]: dead (zset)     KEYS[6]: causes (hash)
-- KEYS[7]: ready (hash)
-- ARGV[1]: max, at most BatchMax   ARGV[2]: max attempts
-- Returns how many leases it handled. An item past its last attempt is
-- dead-lettered; the others go to the tail of pending. Each is added to
-- its new place before it leaves the leases, so a failure (a key of the
-- wrong type) cannot lose it.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local maxAttempts = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #ids == 0 then
  return 0
end
local counts = redis.call('HMGET', KEYS[3], unpack(ids))
local back, ready, dead, deadIds, causes = {}, {}, {}, {}, {}
for i, id in ipairs(ids) do
  local attempt = tonumber(counts[i]) or 0
  if attempt >= maxAttempts then
    dead[#dead + 1] = now
    dead[#dead + 1] = id
    deadIds[#deadIds + 1] = id
    causes[#causes + 1] = id
    causes[#causes + 1] = 'lease expired at attempt ' .. attempt .. ' of ' .. maxAttempts
  else
    back[#back + 1] = id
    ready[#ready + 1] = id
    ready[#ready + 1] = now
  end
end
if #back > 0 then
  redis.call('LPUSH', KEYS[4], unpack(back))
  redis.call('HSET', KEYS[7], unpack(ready))
end
if #deadIds > 0 then
  redis.call('ZADD', KEYS[5], unpack(dead))
  redis.call('HSET', KEYS[6], unpack(causes))
  redis.call('HDEL', KEYS[7], unpack(deadIds))
end
redis.call('ZREM', KEYS[1], unpack(ids))
redis.call('HDEL', KEYS[2], unpack(ids))
return #ids
