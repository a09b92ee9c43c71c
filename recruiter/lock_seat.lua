-- Seat: extend or end a slice's seat beside the job's lock (see
-- lock_acquire.lua), if it is still ours.
-- KEYS[1]: the job's lock key
-- ARGV[1]: the seat's field   ARGV[2]: our token
-- ARGV[3]: the new time to live, ms; 0 to end the seat
-- Returns 1 if done, 0 if the seat was no longer ours.
local key, seat = KEYS[1], ARGV[1]
local v = redis.call('HGET', key, seat)
if not v or string.sub(v, 1, #ARGV[2] + 1) ~= ARGV[2] .. ':' then
  return 0
end
local ttl = tonumber(ARGV[3])
if ttl == 0 then
  redis.call('HDEL', key, seat)
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', key, seat, ARGV[2] .. ':' .. (now + ttl))
if redis.call('PTTL', key) < ttl then
  redis.call('PEXPIRE', key, ttl)
end
return 1
