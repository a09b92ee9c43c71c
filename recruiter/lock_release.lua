-- Release: delete the job's lock if it is still ours.
-- KEYS[1]: the job's lock key
-- ARGV[1]: our token
-- Returns 1 if deleted, 0 if the lock was no longer ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
