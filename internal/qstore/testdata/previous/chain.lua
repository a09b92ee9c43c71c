-- Chain: a chain's progress and its current step's state, read only.
-- KEYS[1]: the chain's record (hash: id, step, steps)
-- KEYS[2]: results (hash)   KEYS[3]: values (hash)   KEYS[4]: dead (zset)
-- KEYS[5]: causes (hash)   KEYS[6]: canceled (zset; see cancel.lua)
-- Returns {state, current id, step, steps, detail}: state 1 acked (detail
-- its result), 2 dead (detail its cause), 3 pending, leased or delayed,
-- 4 canceled, 0 unknown (or its result expired); {0, '', '', '', ''}
-- without a record.
local rec = redis.call('HMGET', KEYS[1], 'id', 'step', 'steps')
local id = rec[1]
if not id then
  return {0, '', '', '', ''}
end
local step, steps = rec[2] or '', rec[3] or ''
local stored = redis.call('HGET', KEYS[2], id)
if stored then
  -- "expiry ms:token:result"
  local at, rest = string.match(stored, '^(%d+):(.*)$')
  local t = redis.call('TIME')
  if at and tonumber(at) > t[1] * 1000 + math.floor(t[2] / 1000) then
    local sep = string.find(rest, ':', 1, true) or 0
    return {1, id, step, steps, string.sub(rest, sep + 1)}
  end
  return {0, id, step, steps, ''}
end
if redis.call('ZSCORE', KEYS[4], id) then
  return {2, id, step, steps, redis.call('HGET', KEYS[5], id) or ''}
end
if redis.call('HEXISTS', KEYS[3], id) == 1 then
  return {3, id, step, steps, ''}
end
if redis.call('ZSCORE', KEYS[6], id) then
  return {4, id, step, steps, ''}
end
return {0, id, step, steps, ''}
