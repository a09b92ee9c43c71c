-- Pause or resume a job for the whole fleet. A slice already running ends
-- as it would; no new one starts while the job is paused.
-- KEYS[1]: the job's lock key (a hash: see recruiter/lock_acquire.lua)
-- ARGV[1]: the pause's length in milliseconds, or 0 to resume
-- Returns 1.
local key = KEYS[1]
local d = tonumber(ARGV[1])
if d == 0 then
  redis.call('HDEL', key, 'paused')
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', key, 'paused', now + d)
if redis.call('PTTL', key) < d then
  redis.call('PEXPIRE', key, d)
end
return 1
