-- Set: write a field of an expiring hash with its expiry, together.
-- KEYS[1]: values (hash field -> value)
-- KEYS[2]: expiry (zset field -> expiry, unix ms by Redis's clock)
-- ARGV[1]: field   ARGV[2]: value   ARGV[3]: ttl in ms, at least 1
-- Returns the expiry. The expiry is written first, so that a failure (a
-- key of the wrong type) cannot leave a value that never expires.
local t = redis.call('TIME')
local at = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], at, ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return at
