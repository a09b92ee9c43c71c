-- Removes the expired members of a sorted set scored by expiry, a bounded
-- batch at a time; one script, so a session renewed between the read and
-- the removal is never removed.
-- KEYS[1]: the sorted set (member -> expiry, unix ms)
-- ARGV[1]: now, unix ms
-- ARGV[2]: the most members to remove
-- Returns the number of members removed.
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #expired > 0 then
  redis.call('ZREM', KEYS[1], unpack(expired))
end
return #expired
