-- needs: readyat
-- Depth: the queue's counts, in O(log n).
-- KEYS[1]: pending (list)   KEYS[2]: leases (zset)   KEYS[3]: delayed (zset)
-- KEYS[4]: dead (zset)      KEYS[5]: ready (hash)
-- KEYS[6]: the set of task types with items set aside (see types.lua)
-- KEYS[7]: the priorities' weights (hash, see lanes.lua)
-- ARGV[1]: the encoding pin (see encodingPin in store.go)
-- Returns {pending, leased, expired, delayed, due, dead, parked, wait of
-- the next item in ms or -1}: pending counts the parked items too, and
-- the wait is the longest of pending's head and of the priorities' lanes'
-- heads, whose items pending counts too (parked items wait for their
-- limit, not for a worker).
-- A canceled item's id stays in its list until a claim meets it (see
-- cancel.lua): pending (and parked) count it until then. Subtracting the
-- tombstones would take a command (SCARD) that the documented ACL grants
-- do not have.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- Not the encoding pin (ARGV[1]) among the leases. ZCOUNT to '(+inf'
-- would skip it in one call, but miniredis counts +inf in it.
local leased = redis.call('ZCARD', KEYS[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  leased = leased - 1
end
local wait = -1
local pending = redis.call('LLEN', KEYS[1])
local lists = {KEYS[1]}
for _, p in ipairs(redis.call('HKEYS', KEYS[7])) do
  if p ~= 'default' then
    lists[#lists + 1] = KEYS[1] .. ':' .. p
    pending = pending + redis.call('LLEN', lists[#lists])
  end
end
for _, list in ipairs(lists) do
  local head = redis.call('LINDEX', list, -1)
  if head then
    local since = readyAt(KEYS[5], head)
    if since then
      wait = math.max(wait, now - since, 0)
    end
  end
end
local parked = 0
for _, typ in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  parked = parked + redis.call('LLEN', KEYS[6] .. ':' .. typ)
end
return {
  pending + parked,
  leased,
  redis.call('ZCOUNT', KEYS[2], '-inf', now),
  redis.call('ZCARD', KEYS[3]),
  redis.call('ZCOUNT', KEYS[3], '-inf', now),
  redis.call('ZCARD', KEYS[4]),
  parked,
  wait,
}
