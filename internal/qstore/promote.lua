-- needs: maintain, byid
-- Promote: move delayed items to the tail of pending, each to its
-- priority's lane: the ids given (those that are delayed, due or not;
-- see listed in byid.lua), or else those that are due, the earliest due
-- first (see promoteDue in maintain.lua).
-- KEYS[1]: delayed (zset)   KEYS[2]: pending (list)   KEYS[3]: ready (hash)
-- ARGV[1]: max, at most BatchMax   ARGV[2...]: the ids, if any
-- Returns how many it moved.
local t = redis.call('TIME')
local nowText = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
return promoteDue(KEYS[1], KEYS[2], KEYS[3], nowText, tonumber(ARGV[1]), listed(KEYS[1]))
