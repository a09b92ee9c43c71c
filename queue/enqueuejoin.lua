-- EnqueueJoin: add a join's children, pending at once, and its final
-- item, held back until the last child is acked (see settle.lua).
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: ready (hash)
-- KEYS[4]: the join's record (hash: left, total)
-- ARGV[1]: the encoding pin (see encodingPin in queue.go), the field "" of
-- values and ready
-- ARGV[2]: the join's id, which is its final item's   ARGV[3]: the final
-- item's payload   then one payload per child, whose id is "ID.n", n from 1
-- The final item's value is stored at once, so Wait and Value see it as
-- live, but its id goes to pending only when the record's left reaches 0.
-- Returns 1 when it added the join, 0 when the join already exists (a
-- resent call, or a join id used before: nothing is added twice). Every
-- key's type is checked before the first write.
local id = ARGV[2]
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('HEXISTS', KEYS[2], id) == 1 then
  return 0
end
redis.call('LLEN', KEYS[1])
redis.call('HEXISTS', KEYS[3], '')
local t = redis.call('TIME')
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
local n = #ARGV - 3
local values, ready, ids = {'', ARGV[1], id, ARGV[3]}, {'', ARGV[1]}, {}
for i = 1, n do
  local cid = id .. '.' .. i
  ids[i] = cid
  values[#values + 1] = cid
  values[#values + 1] = ARGV[3 + i]
  ready[#ready + 1] = cid
  ready[#ready + 1] = now
end
redis.call('HSET', KEYS[2], unpack(values))
redis.call('HSET', KEYS[4], 'left', n, 'total', n)
redis.call('LPUSH', KEYS[1], unpack(ids))
redis.call('HSET', KEYS[3], unpack(ready))
return 1
