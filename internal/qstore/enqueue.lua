-- Enqueue: add items at the tail (left end) of pending, in order. An id
-- that already has a value is left alone, so a resent call adds nothing
-- twice.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: ready (hash)
-- ARGV[1]: the encoding pin (see encodingPin in store.go), stored as the
-- field "" of values and ready
-- then ARGV: id, payload, id, payload, ... (at most BatchMax pairs)
-- Returns the number of items added.
local t = redis.call('TIME')
-- A string, made once: Lua turns a number into a string slowly.
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local asked = {}
for i = 2, #ARGV, 2 do
  asked[#asked + 1] = ARGV[i]
end
local existing = redis.call('HMGET', KEYS[2], unpack(asked))
redis.call('LLEN', KEYS[1]) -- fails on a malformed pending list before any write
local ids, values, ready, seen = {}, {'', ARGV[1]}, {'', ARGV[1]}, {}
for i, id in ipairs(asked) do
  if not existing[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    values[#values + 1] = id
    values[#values + 1] = ARGV[2 * i + 1]
    ready[#ready + 1] = id
    ready[#ready + 1] = now
  end
end
if #ids > 0 then
  redis.call('HSET', KEYS[2], unpack(values))
  redis.call('LPUSH', KEYS[1], unpack(ids))
  redis.call('HSET', KEYS[3], unpack(ready))
end
return #ids
