-- needs: expired, maintain
-- Tidy: hand back expired leases, the longest expired first, and drop
-- expired results (see handBackExpired in maintain.lua and dropExpired in
-- expired.lua).
-- KEYS[1]: leases (zset)   KEYS[2]: attempts (hash)   KEYS[3]: pending (list)
-- KEYS[4]: dead (zset)     KEYS[5]: causes (hash)     KEYS[6]: ready (hash)
-- KEYS[7]: results (hash)  KEYS[8]: expiring (list)   KEYS[9]: limits (hash)
-- KEYS[10]: values (hash)
-- ARGV[1]: max, at most BatchMax   ARGV[2]: max attempts, for the items
-- without a limit of their own in limits
-- Returns {how many leases it handled, the dead letters' list}: an item
-- past its last attempt is dead-lettered (the list: claim.lua's), the
-- others go to the tail of pending. Up to max expired
-- results go too (Settle drops them as well; Tidy catches up with a queue
-- that acks little).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local max, maxAttempts = tonumber(ARGV[1]), tonumber(ARGV[2])

dropExpired(KEYS[7], KEYS[8], now, max)

local report = {'dead'}
local n = handBackExpired({
  leases = KEYS[1], attempts = KEYS[2], pending = KEYS[3], dead = KEYS[4],
  causes = KEYS[5], ready = KEYS[6], limits = KEYS[9], values = KEYS[10], report = report,
}, tostring(now), max, maxAttempts)
return {n, report}
