-- Delete: remove fields of an expiring hash with their expiries.
-- KEYS[1]: values (hash)   KEYS[2]: expiry (zset)
-- ARGV: the fields, at most 1000
-- Returns how many of them had a value, expired or not.
local n = redis.call('HDEL', KEYS[1], unpack(ARGV))
redis.call('ZREM', KEYS[2], unpack(ARGV))
return n
