-- Claim: lease up to n items from the head (right end) of pending.
-- KEYS[1]: pending (list)    KEYS[2]: leases (zset)    KEYS[3]: values (hash)
-- KEYS[4]: attempts (hash)   KEYS[5]: tokens (hash)    KEYS[6]: seq (counter)
-- KEYS[7]: delayed (zset)    KEYS[8]: dead (zset)      KEYS[9]: causes (hash)
-- ARGV[1]: n, at most BatchMax   ARGV[2]: lease length in ms
-- Returns {deadline ms, then id, payload, attempt, token per item}.
-- Malformed entries do not stop it: an id already leased, delayed, dead or
-- met earlier in this call is a duplicate and is dropped; one without a
-- value is dead-lettered. Their places are refilled once, so at most 2n
-- entries are looked at. Bulk commands keep the cost per item small.
-- Redis does not roll back a script that fails half-way (a key of the
-- wrong type), so ids are only peeked at first and trimmed from pending
-- last: a failure leaves them pending, never lost.
local n = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local deadline = now + tonumber(ARGV[2])
local out = {deadline}
if redis.call('LLEN', KEYS[1]) == 0 then
  return out -- an empty poll writes nothing
end
-- Reserve tokens first: INCRBY fails on a malformed counter before any
-- other write (a burnt range of tokens is harmless).
local seq = redis.call('INCRBY', KEYS[6], n) - n
local got, looked, seen = 0, 0, {}
local leases, tokens, attempts, dead, causes = {}, {}, {}, {}, {}
for _ = 1, 2 do
  local want = n - got
  if want == 0 then
    break
  end
  -- The want entries before the ones already looked at, head last.
  local ids = redis.call('LRANGE', KEYS[1], -(looked + want), -(looked + 1))
  if #ids == 0 then
    break
  end
  looked = looked + #ids
  local values = redis.call('HMGET', KEYS[3], unpack(ids))
  local leased = redis.call('HMGET', KEYS[5], unpack(ids))
  local delayed = redis.call('ZMSCORE', KEYS[7], unpack(ids))
  local buried = redis.call('ZMSCORE', KEYS[8], unpack(ids))
  local counts = redis.call('HMGET', KEYS[4], unpack(ids))
  for i = #ids, 1, -1 do
    local id = ids[i]
    if not (seen[id] or leased[i] or delayed[i] or buried[i]) then
      seen[id] = true
      if values[i] then
        got = got + 1
        local attempt = (tonumber(counts[i]) or 0) + 1
        local token = tostring(seq + got)
        leases[#leases + 1] = deadline
        leases[#leases + 1] = id
        tokens[#tokens + 1] = id
        tokens[#tokens + 1] = token
        attempts[#attempts + 1] = id
        attempts[#attempts + 1] = attempt
        out[#out + 1] = id
        out[#out + 1] = values[i]
        out[#out + 1] = attempt
        out[#out + 1] = token
      else
        dead[#dead + 1] = now
        dead[#dead + 1] = id
        causes[#causes + 1] = id
        causes[#causes + 1] = 'malformed: pending id has no stored value'
      end
    end
  end
  if #ids < want then
    break -- pending is exhausted
  end
end
if got > 0 then
  redis.call('ZADD', KEYS[2], unpack(leases))
  redis.call('HSET', KEYS[5], unpack(tokens))
  redis.call('HSET', KEYS[4], unpack(attempts))
end
if #dead > 0 then
  redis.call('ZADD', KEYS[8], unpack(dead))
  redis.call('HSET', KEYS[9], unpack(causes))
end
redis.call('LTRIM', KEYS[1], 0, -(looked + 1))
return out
