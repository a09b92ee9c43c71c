-- RequeueDeadIDs: move the given dead letters back to the tail of
-- pending, with a fresh count of attempts; ids that are not dead letters
-- are left alone.
-- KEYS[1]: dead (zset)     KEYS[2]: pending (list)   KEYS[3]: attempts (hash)
-- KEYS[4]: causes (hash)   KEYS[5]: ready (hash)
-- ARGV: the ids, at most BatchMax
-- Returns how many it moved. Pushed before they are removed, so a failed
-- script cannot lose them.
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ARGV))
local t = redis.call('TIME')
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local ids, ready, seen = {}, {}, {}
for i, id in ipairs(ARGV) do
  if scores[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    ready[#ready + 1] = id
    ready[#ready + 1] = now
  end
end
if #ids == 0 then
  return 0
end
redis.call('LPUSH', KEYS[2], unpack(ids))
redis.call('HSET', KEYS[5], unpack(ready))
redis.call('HDEL', KEYS[3], unpack(ids))
redis.call('HDEL', KEYS[4], unpack(ids))
redis.call('ZREM', KEYS[1], unpack(ids))
return #ids
