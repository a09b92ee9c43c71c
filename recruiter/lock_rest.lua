-- Rest: end the slice that holds the job's lock, if it is still ours, and
-- let the job rest: its cluster-wide cooldown (fixed pace with Every).
-- KEYS[1]: the job's lock key (a hash: see lock_acquire.lua)
-- ARGV[1]: our token   ARGV[2]: the rest's length in milliseconds
-- Returns 1 if the job rests, 0 if the lock was no longer ours.
local key = KEYS[1]
if redis.call('HGET', key, 'token') ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local d = tonumber(ARGV[2])
redis.call('HDEL', key, 'token', 'held')
redis.call('HSET', key, 'rest', now + d)
if redis.call('PTTL', key) < d then
  redis.call('PEXPIRE', key, d)
end
return 1
