-- Evict: remove the expired fields of an expiring hash, the longest
-- expired first.
-- KEYS[1]: values (hash field -> value)
-- KEYS[2]: expiry (zset field -> expiry, unix ms by Redis's clock)
-- ARGV[1]: max, 1 to 1000
-- Returns how many fields it removed. Being one script, it cannot remove a
-- field that is set again, with a later expiry, between its read and its
-- removal.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local fields = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
if #fields == 0 then
  return 0
end
redis.call('HDEL', KEYS[1], unpack(fields))
redis.call('ZREM', KEYS[2], unpack(fields))
return #fields
