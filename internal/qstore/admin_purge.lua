-- PurgeDeadIDs: delete the given dead letters and everything kept about
-- them; ids that are not dead letters are left alone.
-- KEYS[1]: dead (zset)     KEYS[2]: values (hash)   KEYS[3]: attempts (hash)
-- KEYS[4]: causes (hash)   KEYS[5]: ready (hash)    KEYS[6]: waiting (hash)
-- KEYS[7]: limits (hash)
-- ARGV: the ids, at most BatchMax
-- Returns how many it deleted.
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ARGV))
local ids, seen = {}, {}
for i, id in ipairs(ARGV) do
  if scores[i] and not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
  end
end
if #ids == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], unpack(ids))
for i = 2, 7 do
  redis.call('HDEL', KEYS[i], unpack(ids))
end
return #ids
