-- needs: types, lanes
-- Release: hand claimed items back to the head of pending, uncounted; an
-- item of a limited task type to the head of its type's set-aside items
-- (see types.lua), which are claimed before pending's.
-- KEYS[1]: leases (zset)   KEYS[2]: attempts (hash)   KEYS[3]: pending (list)
-- ARGV: id, claim token, id, claim token, ... (at most BatchMax pairs)
-- Returns how many were released; an item whose claim is no longer current
-- is left alone. Their ready times are kept: they were next in line.
-- A leased item's attempts field is its token, "attempt-claim": it goes
-- back to the count before this claim, or away if that is 0.
local asked = {}
for i = 1, #ARGV, 2 do
  asked[#asked + 1] = ARGV[i]
end
local current = redis.call('HMGET', KEYS[2], unpack(asked))
local ids, tokens, keep, drop, seen = {}, {}, {}, {}, {}
for i, id in ipairs(asked) do
  -- A bare count ("2", not leased) is no token, even when sent as one.
  if current[i] == ARGV[2 * i] and not seen[id] and string.find(current[i], '-', 1, true) then
    seen[id] = true
    ids[#ids + 1] = id
    tokens[#ids] = current[i]
    local attempt = (tonumber(string.match(current[i], '^%d+')) or 1) - 1
    if attempt > 0 then
      keep[#keep + 1] = id
      keep[#keep + 1] = attempt
    else
      drop[#drop + 1] = id
    end
  end
end
if #ids == 0 then
  return 0
end
-- Pushed back first, so a failed script cannot lose them; backwards, so
-- the first of them claimed is the first claimed again.
local tag = tagOf(KEYS[1])
-- One EXISTS for two keys: it counts a key named twice twice.
local lanes = string.sub(KEYS[3], 1, #KEYS[3] - 8) .. ':lanes'
local flags = redis.call('EXISTS', tag .. ':holding', lanes, lanes)
local held = flags % 2 == 1
local types = held and redis.call('HMGET', tag .. ':holding', unpack(ids)) or {}
local back, parked = {}, {}
for i = #ids, 1, -1 do
  local typ = types[i]
  if typ then
    local p = parked[typ] or {}
    parked[typ] = p
    p[#p + 1] = ids[i]
  else
    back[#back + 1] = ids[i]
  end
end
pushPending(KEYS[3], 'RPUSH', back, flags >= 2) -- each to its lane (lanes.lua)
for typ, p in pairs(parked) do
  redis.call('RPUSH', tag .. ':parked:' .. typ, unpack(p))
  redis.call('SADD', tag .. ':parked', typ)
end
redis.call('ZREM', KEYS[1], unpack(ids))
-- Their places in their types' limits, and their starts: they never ran.
letGo(tag, ids, tokens, held)
if #keep > 0 then
  redis.call('HSET', KEYS[2], unpack(keep))
end
if #drop > 0 then
  redis.call('HDEL', KEYS[2], unpack(drop))
end
return #ids
