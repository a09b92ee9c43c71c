-- Rest: turn the job's lock, if still ours, into its cluster-wide cooldown.
-- KEYS[1]: the job's lock key
-- ARGV[1]: our token   ARGV[2]: the value that marks a cooldown
-- ARGV[3]: the cooldown's length in milliseconds
-- Returns 1 if the cooldown was set, 0 if the lock was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
