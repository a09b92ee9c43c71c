-- Result: an acked item's result, while it is kept. Read only.
-- KEYS[1]: results (hash)
-- ARGV[1]: id
-- Returns the result, or nil if there is none or it expired (an expired
-- one waits for Settle or Tidy to drop it).
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  return nil
end
-- "expiry ms:token:result"; the token has no ':'.
local at, rest = string.match(stored, '^(%d+):(.*)$')
local t = redis.call('TIME')
if not at or tonumber(at) <= t[1] * 1000 + math.floor(t[2] / 1000) then
  return nil
end
local sep = string.find(rest, ':', 1, true) or 0
return string.sub(rest, sep + 1)
