-- needs: lanes, byid
-- RequeueDead: move dead letters back to the tail of pending, each to its
-- priority's lane (pushPending in lanes.lua), with a fresh count of
-- attempts: the ids given (those that are dead letters; see listed in
-- byid.lua), or else the oldest.
-- KEYS[1]: dead (zset)     KEYS[2]: pending (list)   KEYS[3]: attempts (hash)
-- KEYS[4]: causes (hash)   KEYS[5]: ready (hash)
-- ARGV[1]: max, at most BatchMax   ARGV[2...]: the ids, if any
-- Returns how many it moved. Pushed before they are removed, so a failed
-- script cannot lose them.
local t = redis.call('TIME')
-- A string, made once: Lua turns a number into a string slowly.
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local ids = listed(KEYS[1]) or redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then
  return 0
end
local ready = {}
for _, id in ipairs(ids) do
  ready[#ready + 1] = id
  ready[#ready + 1] = now
end
pushPending(KEYS[2], 'LPUSH', ids)
redis.call('HSET', KEYS[5], unpack(ready))
redis.call('HDEL', KEYS[3], unpack(ids))
redis.call('HDEL', KEYS[4], unpack(ids))
redis.call('ZREM', KEYS[1], unpack(ids))
return #ids
