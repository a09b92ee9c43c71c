-- EvictMembers: remove the expired members of a sorted set scored by
-- expiry time, the longest expired first.
-- KEYS[1]: the sorted set (member -> expiry, in units since the Unix epoch)
-- ARGV[1]: max, 1 to 1000   ARGV[2]: the unit of the scores, in ms
-- Returns how many members it removed. A member expires once Redis's
-- clock, in whole units, reaches its score. Being one script, it cannot
-- remove a member whose score is raised between its read and its removal.
local t = redis.call('TIME')
local now = math.floor((t[1] * 1000 + math.floor(t[2] / 1000)) / tonumber(ARGV[2]))
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #members == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], unpack(members))
return #members
