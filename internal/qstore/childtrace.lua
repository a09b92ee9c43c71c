-- needs: traces
-- ChildTrace: keep the trace context of a join's child's run with the
-- join's final item, so that the final item's run links to each child's
-- (withTraces in traces.lua reads them back).
-- KEYS[1]: the final item's trace key
-- ARGV[1]: the child run's trace context   ARGV[2]: at most this many bytes kept
-- ARGV[3]: the queue's hash tag
-- Returns 1 if kept, 0 when the bound is reached.
local links = redis.call('HGET', KEYS[1], 'links')
if links and #links + 1 + #ARGV[1] > tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'links', links and (links .. ' ' .. ARGV[1]) or ARGV[1])
if redis.call('PTTL', KEYS[1]) < traceKeep then
  redis.call('PEXPIRE', KEYS[1], traceKeep)
end
markTraced(ARGV[3], traceKeep)
return 1
