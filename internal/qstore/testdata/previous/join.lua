-- Join: a join's progress, read only.
-- KEYS[1]: the join's record (hash: left, total)   KEYS[2]: results (hash)
-- KEYS[3]: values (hash)   KEYS[4]: dead (zset)   KEYS[5]: causes (hash)
-- KEYS[6]: canceled (zset; see cancel.lua)
-- ARGV[1]: the join's id, its final item's
-- Returns {state, total, left, dead children, first dead child, detail}:
-- state 1 the final item acked (detail its result), 2 a child or the
-- final item dead (detail its cause), 3 running, 4 canceled (its final
-- item was), 0 unknown (no record, or the final item's result expired).
local rec = redis.call('HMGET', KEYS[1], 'left', 'total')
local left, total = tonumber(rec[1]), tonumber(rec[2])
if not left or not total then
  return {0, 0, 0, 0, '', ''}
end
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[6], id) then
  return {4, total, left, 0, '', ''}
end
if left > 0 then
  local ids = {}
  for i = 1, total do
    ids[i] = id .. '.' .. i
  end
  local scores = redis.call('ZMSCORE', KEYS[4], unpack(ids))
  local ndead, first = 0, nil
  for i = 1, total do
    if scores[i] then
      ndead = ndead + 1
      first = first or ids[i]
    end
  end
  if first then
    return {2, total, left, ndead, first, redis.call('HGET', KEYS[5], first) or ''}
  end
  return {3, total, left, 0, '', ''}
end
local stored = redis.call('HGET', KEYS[2], id)
if stored then
  -- "expiry ms:token:result"
  local at, rest = string.match(stored, '^(%d+):(.*)$')
  local t = redis.call('TIME')
  if at and tonumber(at) > t[1] * 1000 + math.floor(t[2] / 1000) then
    local sep = string.find(rest, ':', 1, true) or 0
    return {1, total, 0, 0, '', string.sub(rest, sep + 1)}
  end
  return {0, total, 0, 0, '', ''}
end
if redis.call('ZSCORE', KEYS[4], id) then
  return {2, total, 0, 0, '', redis.call('HGET', KEYS[5], id) or ''}
end
if redis.call('HEXISTS', KEYS[3], id) == 1 then
  return {3, total, 0, 0, '', ''}
end
return {0, total, 0, 0, '', ''}
