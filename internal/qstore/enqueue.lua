-- Enqueue: add items at the tail (left end) of pending, in order; or, with
-- a delay, to delayed, all due at once; each with an attempt limit of its
-- own when one is given. An id that already has a value is left alone, so
-- a resent call adds nothing twice.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: ready (hash)
-- KEYS[4]: delayed (zset)   KEYS[5]: limits (hash)
-- ARGV[1]: the encoding pin (see encodingPin in store.go), stored as the
-- field "" of values and ready (and of limits, with a limit)
-- ARGV[2]: delay in ms (0: pending at once)
-- ARGV[3]: max attempts of every item (0: the queue's)
-- ARGV[4]: the items' priority ('' or 'default': none), which must have a
-- weight: they wait in its lane rather than in pending (see lanes.lua)
-- then ARGV: id, payload, id, payload, ... (at most BatchMax pairs)
-- Returns the number of items added.
local t = redis.call('TIME')
local delay, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
-- A string, made once: Lua turns a number into a string slowly.
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local asked = {}
for i = 5, #ARGV, 2 do
  asked[#asked + 1] = ARGV[i]
end
local existing = redis.call('HMGET', KEYS[2], unpack(asked))
-- Fail on a malformed key before any write.
if delay > 0 then
  redis.call('ZCARD', KEYS[4])
else
  redis.call('LLEN', KEYS[1])
end
if limit > 0 then
  redis.call('HEXISTS', KEYS[5], '')
end
local priority = ARGV[4] ~= '' and ARGV[4] ~= 'default' and ARGV[4]
local tag = string.sub(KEYS[1], 1, #KEYS[1] - 8) -- ':pending'
if priority and redis.call('HEXISTS', tag .. ':weights', priority) == 0 then
  return redis.error_reply('ERR enqueue: unknown priority "' .. priority .. '"')
end
local ids, values, ready, limits, seen = {}, {'', ARGV[1]}, {'', ARGV[1]}, {'', ARGV[1]}, {}
for i, id in ipairs(asked) do
  if not existing[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    values[#values + 1] = id
    values[#values + 1] = ARGV[2 * i + 4]
    if delay == 0 then
      ready[#ready + 1] = id
      ready[#ready + 1] = now
    end
    if limit > 0 then
      limits[#limits + 1] = id
      limits[#limits + 1] = ARGV[3]
    end
  end
end
if #ids == 0 then
  return 0
end
redis.call('HSET', KEYS[2], unpack(values))
if priority then
  local lanes = {}
  for _, id in ipairs(ids) do
    lanes[#lanes + 1] = id
    lanes[#lanes + 1] = priority
  end
  redis.call('HSET', tag .. ':lanes', unpack(lanes))
end
if limit > 0 then
  redis.call('HSET', KEYS[5], unpack(limits))
end
if delay > 0 then
  -- TIME rounded up, so no item is due before the delay is over.
  local due = t[1] * 1000 + math.ceil(t[2] / 1000) + delay
  local scored = {}
  for _, id in ipairs(ids) do
    scored[#scored + 1] = due
    scored[#scored + 1] = id
  end
  redis.call('ZADD', KEYS[4], unpack(scored))
else
  redis.call('LPUSH', priority and KEYS[1] .. ':' .. priority or KEYS[1], unpack(ids))
  redis.call('HSET', KEYS[3], unpack(ready))
end
return #ids
