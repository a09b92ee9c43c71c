-- Release: end the slice that holds the job's lock, if it is still ours.
-- KEYS[1]: the job's lock key (a hash: see lock_acquire.lua)
-- ARGV[1]: our token
-- ARGV[2]: 'more' (automatic pace: the slice left a backlog, so its slot
-- opens again and the streak grows), 'hold' (the slice of a streak caught
-- up but found items: its slot opens again), 'less' (the slice of a streak
-- found nothing: the streak shrinks; its slot opens again unless the streak
-- ends), 'done' (the streak ends), or ''
-- Returns 1 if released, 0 if the lock was no longer ours.
local key = KEYS[1]
if redis.call('HGET', key, 'token') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', key, 'token', 'held')
if ARGV[2] == 'more' then
  redis.call('HDEL', key, 'slot')
  redis.call('HSET', key, 'streak', (tonumber(redis.call('HGET', key, 'streak')) or 0) + 1)
elseif ARGV[2] == 'hold' then
  redis.call('HDEL', key, 'slot')
elseif ARGV[2] == 'less' then
  local streak = (tonumber(redis.call('HGET', key, 'streak')) or 1) - 1
  if streak > 0 then
    redis.call('HDEL', key, 'slot')
    redis.call('HSET', key, 'streak', streak)
  else
    redis.call('HDEL', key, 'streak')
  end
elseif ARGV[2] == 'done' then
  redis.call('HDEL', key, 'streak')
end
return 1
