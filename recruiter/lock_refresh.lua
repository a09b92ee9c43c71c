-- Refresh: extend the job's lock if it is still ours.
-- KEYS[1]: the job's lock key (a hash: see lock_acquire.lua)
-- ARGV[1]: our token   ARGV[2]: the new time to live in milliseconds
-- Returns 1 if extended, 0 if the lock was no longer ours.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'held', now + ttl)
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
