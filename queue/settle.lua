-- Settle: ack or nack claimed items whose claim token is still current.
-- KEYS[1]: leases (zset)   KEYS[2]: values (hash)   KEYS[3]: attempts (hash)
-- KEYS[4]: tokens (hash)   KEYS[5]: ready (hash)    KEYS[6]: causes (hash)
-- KEYS[7]: delayed (zset)  KEYS[8]: dead (zset)     KEYS[9]: waiting (hash)
-- then per item i (from 0): KEYS[10+2i] its result, KEYS[11+2i] its
-- wake-up list (both in the queue's hash tag).
-- ARGV[1]: result retention ms   ARGV[2]: wake-up list ttl ms
-- ARGV[3]: max attempts
-- then per item i: ARGV[4+4i] id, [5+4i] claim token, [6+4i] the stored
-- result "token:result" (ack) or the cause (nack), [7+4i] -1 for an ack,
-- else the retry backoff in ms.
-- At most BatchMax items. Returns one code per item: 1 acked, 2 delayed
-- for a retry, 3 dead-lettered, 0 claim no longer current (nothing done).
-- Redis does not roll back a failed script, so each item is added to its
-- new place before it is taken from the old: a failure can leave it in two
-- places (which Claim and Tidy resolve), never in none.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local retention, ttl, maxAttempts = ARGV[1], ARGV[2], tonumber(ARGV[3])

local function wake(key)
  if redis.call('EXISTS', key) == 0 then
    redis.call('RPUSH', key, '1')
  end
  redis.call('PEXPIRE', key, ttl)
end

local ids = {}
for i = 4, #ARGV, 4 do
  ids[#ids + 1] = ARGV[i]
end
local current = redis.call('HMGET', KEYS[4], unpack(ids))
local waited = redis.call('HMGET', KEYS[9], unpack(ids))
local codes, acked, seen = {}, {}, {}
for i, id in ipairs(ids) do
  local token, data, backoff = ARGV[1 + 4 * i], ARGV[2 + 4 * i], tonumber(ARGV[3 + 4 * i])
  local resultKey, wakeKey = KEYS[8 + 2 * i], KEYS[9 + 2 * i]
  local code = 0
  if current[i] == token and not seen[id] then
    seen[id] = true -- a second outcome for the same claim changes nothing
    if backoff < 0 then
      redis.call('SET', resultKey, data, 'PX', retention)
      if waited[i] then
        wake(wakeKey)
      end
      acked[#acked + 1] = id
      code = 1
    else
      -- A missing attempt count is malformed data: dead-letter, never loop.
      local attempt = tonumber(redis.call('HGET', KEYS[3], id)) or maxAttempts
      if attempt >= maxAttempts then
        redis.call('ZADD', KEYS[8], now, id)
        if waited[i] then
          wake(wakeKey)
          redis.call('HDEL', KEYS[9], id)
        end
        redis.call('HDEL', KEYS[5], id)
        code = 3
      else
        redis.call('ZADD', KEYS[7], now + backoff, id)
        code = 2
      end
      redis.call('HSET', KEYS[6], id, data)
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[4], id)
    end
  elseif backoff < 0 and not seen[id] then
    local stored = redis.call('GET', resultKey)
    if stored and string.sub(stored, 1, #token + 1) == token .. ':' then
      code = 1 -- this claim's ack, resent
    end
  end
  codes[i] = code
end
if #acked > 0 then
  redis.call('ZREM', KEYS[1], unpack(acked))
  for _, k in ipairs({KEYS[4], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[9]}) do
    redis.call('HDEL', k, unpack(acked))
  end
end
return codes
