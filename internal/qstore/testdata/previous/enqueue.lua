-- Enqueue: add items at the tail (left end) of pending, in order; or, with
-- a delay, to delayed, all due at once; each with an attempt limit of its
-- own when one is given. An id that already has a value is left alone, so
-- a resent call adds nothing twice.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: delayed (zset)
-- KEYS[4]: limits (hash)
-- ARGV[1]: the encoding pin (see encodingPin in store.go), stored as the
-- field "" of values (and of limits, with a limit)
-- ARGV[2]: delay in ms (0: pending at once)
-- ARGV[3]: max attempts of every item (0: the queue's)
-- ARGV[4]: the items' priority ('' or 'default': none), which must have a
-- weight: they wait in its lane rather than in pending (see lanes.lua)
-- then ARGV: id, payload, id, payload, ... (at most BatchMax pairs)
-- Returns the number of items added. A key of the wrong type fails the
-- call with nothing written: values is read before the first write, and
-- the writes that may still fail take back the ones before them (see
-- undo.lua). A pending item's ready time is its id's (see readyat.lua).
local delay, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local asked = {}
for i = 5, #ARGV, 2 do
  asked[#asked + 1] = ARGV[i]
end
local existing = redis.call('HMGET', KEYS[2], unpack(asked))
local priority = ARGV[4] ~= '' and ARGV[4] ~= 'default' and ARGV[4]
local lanes
if priority then
  local tag = string.sub(KEYS[1], 1, #KEYS[1] - 8) -- ':pending'
  if redis.call('HEXISTS', tag .. ':weights', priority) == 0 then
    return redis.error_reply('ERR enqueue: unknown priority "' .. priority .. '"')
  end
  lanes = tag .. ':lanes'
end
local ids, values, seen = {}, {'', ARGV[1]}, {}
for i, id in ipairs(asked) do
  if not existing[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    values[#values + 1] = id
    values[#values + 1] = ARGV[2 * i + 4]
  end
end
if #ids == 0 then
  return 0
end
-- What this call wrote so far, for takeBack.
local valued, limited, laned
local function takeBack(err)
  if laned then
    redis.call('HDEL', lanes, unpack(ids))
  end
  if limited then
    dropFields(KEYS[4], ids, limited)
  end
  dropFields(KEYS[2], ids, valued)
  error(err)
end
valued = redis.call('HSET', KEYS[2], unpack(values))
if limit > 0 then
  local limits = {'', ARGV[1]}
  for _, id in ipairs(ids) do
    limits[#limits + 1] = id
    limits[#limits + 1] = ARGV[3]
  end
  local r = redis.pcall('HSET', KEYS[4], unpack(limits))
  if failed(r) then
    takeBack(r)
  end
  limited = r
end
if priority then
  local of = {}
  for _, id in ipairs(ids) do
    of[#of + 1] = id
    of[#of + 1] = priority
  end
  local r = redis.pcall('HSET', lanes, unpack(of))
  if failed(r) then
    takeBack(r)
  end
  laned = true
end
if delay > 0 then
  -- TIME rounded up, so no item is due before the delay is over.
  local t = redis.call('TIME')
  local due = t[1] * 1000 + math.ceil(t[2] / 1000) + delay
  local scored = {}
  for _, id in ipairs(ids) do
    scored[#scored + 1] = due
    scored[#scored + 1] = id
  end
  local r = redis.pcall('ZADD', KEYS[3], unpack(scored))
  if failed(r) then
    takeBack(r)
  end
else
  local r = pushLane(redis.pcall, 'LPUSH', KEYS[1], priority, ids) -- lanes.lua
  if failed(r) then
    takeBack(r)
  end
end
return #ids
