-- needs: types
-- Extend: move the deadline of a lease that is still ours.
-- KEYS[1]: leases (zset)   KEYS[2]: attempts (hash)
-- ARGV[1]: id   ARGV[2]: claim token   ARGV[3]: new lease length in ms
-- Returns the new deadline in ms, or -1 if the claim is no longer current
-- (the item's attempts field holds its token, "attempt-claim", while it
-- is leased, and the bare count otherwise: a token without '-' is forged).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] or not string.find(ARGV[2], '-', 1, true) then
  return -1
end
local t = redis.call('TIME')
local deadline = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], deadline, ARGV[1])
-- An item of a limited type holds its place as long as its lease (see
-- types.lua).
local tag = tagOf(KEYS[1])
local typ = redis.call('HGET', tag .. ':holding', ARGV[1])
if typ then
  redis.call('ZADD', tag .. ':running:' .. typ, 'XX', deadline, ARGV[1])
end
return deadline
