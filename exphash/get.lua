-- Get: read a field of an expiring hash unless it has expired.
-- KEYS[1]: values (hash field -> value)
-- KEYS[2]: expiry (zset field -> expiry, unix ms by Redis's clock)
-- ARGV[1]: field
-- Returns the value, or nil if the field is missing or expired but not yet
-- evicted. A field without an expiry (written by other code) never expires.
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if at then
  local t = redis.call('TIME')
  if tonumber(at) <= t[1] * 1000 + math.floor(t[2] / 1000) then
    return false
  end
end
return redis.call('HGET', KEYS[1], ARGV[1])
