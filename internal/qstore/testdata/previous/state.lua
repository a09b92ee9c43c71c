-- State: where an item is, for Wait; a live item is marked as waited for,
-- so that its Ack (or Nack to the dead letters) fills its wake-up list.
-- KEYS[1]: results (hash)   KEYS[2]: values (hash)   KEYS[3]: dead (zset)
-- KEYS[4]: causes (hash)    KEYS[5]: waiting (hash)
-- KEYS[6]: the record of the join the item would be the final item of
-- KEYS[7]: canceled (zset id → until when kept, ms; see cancel.lua)
-- ARGV[1]: id
-- Returns {1, result} acked, {2, cause} dead, {3, ''} pending, leased or
-- delayed, {4, ''} canceled, {0, ''} unknown (or its result or cancel
-- expired). A join's final item
-- waiting for children of which one is dead counts as dead, with that
-- child's cause: the join failed.
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then
  -- "expiry ms:token:result"; an expired one waits for Settle or Tidy to
  -- drop it.
  local at, rest = string.match(stored, '^(%d+):(.*)$')
  local t = redis.call('TIME')
  if at and tonumber(at) > t[1] * 1000 + math.floor(t[2] / 1000) then
    local sep = string.find(rest, ':', 1, true) or 0
    return {1, string.sub(rest, sep + 1)}
  end
  return {0, ''}
end
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return {2, redis.call('HGET', KEYS[4], ARGV[1]) or ''}
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  local rec = redis.call('HMGET', KEYS[6], 'left', 'total')
  local left, total = tonumber(rec[1]), tonumber(rec[2])
  if left and total and left > 0 then
    local ids = {}
    for i = 1, total do
      ids[i] = ARGV[1] .. '.' .. i
    end
    local scores = redis.call('ZMSCORE', KEYS[3], unpack(ids))
    for i = 1, total do
      if scores[i] then
        return {2, 'child ' .. ids[i] .. ': ' .. (redis.call('HGET', KEYS[4], ids[i]) or '')}
      end
    end
  end
  redis.call('HSET', KEYS[5], ARGV[1], '1')
  return {3, ''}
end
local kept = tonumber(redis.call('ZSCORE', KEYS[7], ARGV[1]))
if kept then
  local t = redis.call('TIME')
  if kept > t[1] * 1000 + math.floor(t[2] / 1000) then
    return {4, ''}
  end
end
return {0, ''}
