-- Promote: move delayed items that are due to the tail of pending.
-- KEYS[1]: delayed (zset)   KEYS[2]: pending (list)   KEYS[3]: ready (hash)
-- ARGV[1]: max, at most BatchMax
-- Returns how many it moved, the earliest due first. Pushed before they
-- are removed, so a failed script cannot lose them.
local t = redis.call('TIME')
-- A string, made once: Lua turns a number into a string slowly.
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #ids == 0 then
  return 0
end
local ready = {}
for _, id in ipairs(ids) do
  ready[#ready + 1] = id
  ready[#ready + 1] = now
end
redis.call('LPUSH', KEYS[2], unpack(ids))
redis.call('HSET', KEYS[3], unpack(ready))
redis.call('ZREM', KEYS[1], unpack(ids))
return #ids
