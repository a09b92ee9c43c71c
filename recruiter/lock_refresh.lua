-- Refresh: extend the job's lock if it is still ours.
-- KEYS[1]: the job's lock key
-- ARGV[1]: our token   ARGV[2]: the new time to live in milliseconds
-- Returns 1 if extended, 0 if the lock was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
