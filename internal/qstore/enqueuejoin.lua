-- needs: unique, lanes, traces
-- EnqueueJoin: add a join's children, pending at once or delayed, and its
-- final item, held back until the last child is acked (see settle.lua),
-- with options as enqueuewith.lua has them.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: ready (hash)
-- KEYS[4]: the join's record (hash: left, total)
-- KEYS[5]: delayed (zset)   KEYS[6]: limits (hash)   KEYS[7]: dead (zset)
-- KEYS[8]: the unique key's lock (see unique.lua), with a unique key
-- only
-- KEYS[#KEYS]: the traced marker (traces.lua), when the join has a trace
-- context
-- ARGV[1]: the encoding pin (see encodingPin in store.go), the field "" of
-- values, ready and limits
-- ARGV[2]: the join's id, which is its final item's   ARGV[3]: the final
-- item's payload
-- ARGV[4]: the children's delay in ms (0: pending at once)
-- ARGV[5]: the max attempts of every child and of the final item (0: the
-- queue's)
-- ARGV[6]: the unique key's lifetime in ms (with KEYS[8]; 0: no key)
-- ARGV[7]: the trace context of the children and the final item, with
-- the traced marker only
-- then one payload per child, whose id is "ID.n", n from 1
-- The final item's value is stored at once, so Wait and Value see it as
-- live, and a unique key's lock held by it (the join's id) is held until
-- it is acked or dead; its id goes to pending only when the record's left
-- reaches 0.
-- Returns {id, 0} when it added the join, and when the join already
-- exists (a resent call, or a join id used before: nothing is added
-- twice); {holder, 1} when the unique key is held by another live item
-- (uniqueHolder), adding nothing. Every key's type is checked before the
-- first write.
local id = ARGV[2]
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('HEXISTS', KEYS[2], id) == 1 then
  return {id, 0}
end
local delay, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local unique = false
if tonumber(ARGV[6]) > 0 then
  unique = KEYS[8]
  if not unique then
    return redis.error_reply('ERR enqueue join: a unique key without its lock key')
  end
  local holder = uniqueHolder(unique, KEYS[2], KEYS[7], id)
  if holder then
    return {holder, 1}
  end
end
if delay > 0 then
  redis.call('ZCARD', KEYS[5])
else
  redis.call('LLEN', KEYS[1])
  redis.call('HEXISTS', KEYS[3], '')
end
if limit > 0 then
  redis.call('HEXISTS', KEYS[6], '')
end
local t = redis.call('TIME')
local traced = string.sub(KEYS[#KEYS], -7) == ':traced'
local first = traced and 8 or 7 -- ARGV's first child
local n = #ARGV - first + 1
local values, ids = {'', ARGV[1], id, ARGV[3]}, {}
for i = 1, n do
  local cid = id .. '.' .. i
  ids[i] = cid
  values[#values + 1] = cid
  values[#values + 1] = ARGV[first + i - 1]
end
redis.call('HSET', KEYS[2], unpack(values))
if limit > 0 then
  local limits = {'', ARGV[1], id, ARGV[5]}
  for i = 1, n do
    limits[#limits + 1] = ids[i]
    limits[#limits + 1] = ARGV[5]
  end
  redis.call('HSET', KEYS[6], unpack(limits))
end
redis.call('HSET', KEYS[4], 'left', n, 'total', n)
if delay > 0 then
  -- TIME rounded up, so no child is due before the delay is over.
  local due = t[1] * 1000 + math.ceil(t[2] / 1000) + delay
  local delayed = {}
  for i = 1, n do
    delayed[2 * i - 1] = due
    delayed[2 * i] = ids[i]
  end
  redis.call('ZADD', KEYS[5], unpack(delayed))
else
  local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
  local ready = {'', ARGV[1]}
  for i = 1, n do
    ready[#ready + 1] = ids[i]
    ready[#ready + 1] = now
  end
  pushLane(redis.call, 'LPUSH', KEYS[1], nil, ids) -- the default lane (lanes.lua)
  redis.call('HSET', KEYS[3], unpack(ready))
end
if unique then
  takeUnique(unique, id, ARGV[6])
end
if traced then
  ids[n + 1] = id
  writeTraces(string.sub(KEYS[1], 1, #KEYS[1] - 8), ids, ARGV[7], delay) -- ':pending'
end
return {id, 0}
