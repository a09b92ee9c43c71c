-- needs: byid, traces
-- PurgeDead: delete dead letters and everything kept about them: the ids
-- given (those that are dead letters; see listed in byid.lua), or else
-- the oldest.
-- KEYS[1]: dead (zset)
-- KEYS[2...]: every hash that keeps fields of an item by its id (the list
-- itemHashes in store.go), whatever their number; the ids' trace
-- contexts (traces.lua) go too
-- ARGV[1]: max, at most BatchMax   ARGV[2...]: the ids, if any
-- Returns how many it deleted.
local ids = listed(KEYS[1]) or redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], unpack(ids))
for i = 2, #KEYS do
  redis.call('HDEL', KEYS[i], unpack(ids))
end
local tag = string.sub(KEYS[1], 1, #KEYS[1] - 5) -- ':dead'
if anyTraces(tag) then
  dropTraces(tag, ids)
end
return #ids
