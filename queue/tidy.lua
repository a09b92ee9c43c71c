-- Tidy: hand back expired leases, the longest expired first, and drop
-- expired results.
-- KEYS[1]: leases (zset)   KEYS[2]: attempts (hash)   KEYS[3]: pending (list)
-- KEYS[4]: dead (zset)     KEYS[5]: causes (hash)     KEYS[6]: ready (hash)
-- KEYS[7]: results (hash)  KEYS[8]: expiring (list)   KEYS[9]: limits (hash)
-- ARGV[1]: max, at most BatchMax   ARGV[2]: max attempts, for the items
-- without a limit of their own in limits
-- Returns how many leases it handled. A lease has expired once TIME
-- reaches its deadline: deadlines are whole ms (Claim rounds TIME up), so
-- deadline <= TIME rounded down says just that, never earlier. An item
-- past its last attempt is dead-lettered; the others go to the tail of
-- pending. Each is added to its new place before it leaves the leases, so
-- a failure (a key of the wrong type) cannot lose it. Up to max expired
-- results go too (Settle drops them as well; Tidy catches up with a queue
-- that acks little).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local max, maxAttempts = tonumber(ARGV[1]), tonumber(ARGV[2])

dropExpired(KEYS[7], KEYS[8], now, max)

local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, max)
if #ids == 0 then
  return 0
end
local nowText = tostring(now)
-- A leased item's attempts field is "attempt-claim"; only the count stays.
local fields = redis.call('HMGET', KEYS[2], unpack(ids))
local limits = {}
if redis.call('EXISTS', KEYS[9]) == 1 then
  limits = redis.call('HMGET', KEYS[9], unpack(ids))
end
local back, ready, dead, deadIds, causes, counts = {}, {}, {}, {}, {}, {}
for i, id in ipairs(ids) do
  local count = string.match(fields[i] or '', '^%d+')
  local attempt = tonumber(count) or 0
  local limit = tonumber(limits[i]) or maxAttempts
  if count then
    counts[#counts + 1] = id
    counts[#counts + 1] = count
  end
  if attempt >= limit then
    dead[#dead + 1] = nowText
    dead[#dead + 1] = id
    deadIds[#deadIds + 1] = id
    causes[#causes + 1] = id
    causes[#causes + 1] = 'lease expired at attempt ' .. attempt .. ' of ' .. limit
  else
    back[#back + 1] = id
    ready[#ready + 1] = id
    ready[#ready + 1] = nowText
  end
end
if #back > 0 then
  redis.call('LPUSH', KEYS[3], unpack(back))
  redis.call('HSET', KEYS[6], unpack(ready))
end
if #deadIds > 0 then
  redis.call('ZADD', KEYS[4], unpack(dead))
  redis.call('HSET', KEYS[5], unpack(causes))
  redis.call('HDEL', KEYS[6], unpack(deadIds))
end
redis.call('ZREM', KEYS[1], unpack(ids))
if #counts > 0 then
  redis.call('HSET', KEYS[2], unpack(counts))
end
return #ids
