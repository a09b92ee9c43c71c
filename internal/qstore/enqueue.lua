-- needs: newitems, traces
-- Enqueue: add items at the tail (left end) of pending, in order; or, with
-- a delay, to delayed, all due at once; each with an attempt limit of its
-- own when one is given. An id that already has a value is left alone, so
-- a resent call adds nothing twice.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: delayed (zset)
-- KEYS[4]: limits (hash)   KEYS[5]: the traced marker (traces.lua), only
-- when the items have a trace context
-- ARGV[1]: the encoding pin (see encodingPin in store.go), stored as the
-- field "" of values (and of limits, with a limit)
-- ARGV[2]: delay in ms (0: pending at once)
-- ARGV[3]: max attempts of every item (0: the queue's)
-- ARGV[4]: the items' priority ('' or 'default': none), which must have a
-- weight: they wait in its lane rather than in pending (see lanes.lua)
-- with KEYS[5]: ARGV[5] the items' trace context
-- then ARGV: id, payload, id, payload, ... (at most BatchMax pairs)
-- Returns the number of items added. A key of the wrong type fails the
-- call with nothing written: values is read before the first write, and
-- the writes that may still fail take back the ones before them (see
-- undo.lua). A pending item's ready time is its id's (see readyat.lua).
local traced = KEYS[5] ~= nil
local first = traced and 6 or 5 -- ARGV's first id
local asked = {}
for i = first, #ARGV, 2 do
  asked[#asked + 1] = ARGV[i]
end
local existing = redis.call('HMGET', KEYS[2], unpack(asked))
local priority = ARGV[4] ~= '' and ARGV[4] ~= 'default' and ARGV[4]
local lanes, unknown = lanesFor(priority) -- newitems.lua
if unknown then
  return unknown
end
local ids, values, seen = {}, {'', ARGV[1]}, {}
for i, id in ipairs(asked) do
  if not existing[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    values[#values + 1] = id
    values[#values + 1] = ARGV[first + 2 * i - 1]
  end
end
if #ids == 0 then
  return 0
end
local valued = redis.call('HSET', KEYS[2], unpack(values))
placeNew(ids, valued, ARGV[1], ARGV[3], priority, lanes, tonumber(ARGV[2]))
if traced then
  writeTraces(string.sub(KEYS[5], 1, #KEYS[5] - 7), ids, ARGV[5], ARGV[2]) -- ':traced'
end
return #ids
