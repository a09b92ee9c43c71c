-- Promote: move delayed items that are due to the tail of pending (see
-- promoteDue in maintain.lua, which Go prepends).
-- KEYS[1]: delayed (zset)   KEYS[2]: pending (list)   KEYS[3]: ready (hash)
-- ARGV[1]: max, at most BatchMax
-- Returns how many it moved, the earliest due first.
local t = redis.call('TIME')
local nowText = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
return promoteDue(KEYS[1], KEYS[2], KEYS[3], nowText, tonumber(ARGV[1]))
