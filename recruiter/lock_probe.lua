-- Probe: after a failed lock attempt, why was the job's lock held, and for how long?
-- KEYS[1]: the job's lock key
-- ARGV[1]: the value that marks a cooldown (a running slice's value is its token)
-- Returns {state, pttl}: state 0 = gone (released meanwhile), 1 = a slice runs, 2 = cooldown;
-- pttl in milliseconds, -1 if the key has no expiry.
local value = redis.call('GET', KEYS[1])
if not value then
  return {0, 0}
end
local pttl = redis.call('PTTL', KEYS[1])
if value == ARGV[1] then
  return {2, pttl}
end
return {1, pttl}
