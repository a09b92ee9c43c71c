-- needs: types, traces
-- Cancel: end an item, a chain or a join for good, wherever its items are.
-- KEYS[1]: leases (zset)    KEYS[2]: values (hash)    KEYS[3]: attempts (hash)
-- KEYS[4]: ready (hash)     KEYS[5]: causes (hash)    KEYS[6]: delayed (zset)
-- KEYS[7]: dead (zset)      KEYS[8]: waiting (hash)   KEYS[9]: results (hash)
-- KEYS[10]: limits (hash)   KEYS[11]: canceled (zset id → until when the
-- record is kept, ms)       KEYS[12]: tombstones (set)
-- ARGV[1]: the id: an item's, a chain's (its first step's) or a join's
-- (its final item's); a join's child "JOIN.n" names its join
-- ARGV[2]: result retention ms, how long a canceled record is kept
-- ARGV[3]: wake-up list ttl ms
-- ARGV[4]: the start fence ms (StartFence in cancel.go)
-- Returns {code, canceled, running, fence}: code is the state of the item
-- that names the whole (the item; a chain's current step; a join's final
-- item) before this call: 1 canceled here, 2 canceled here while leased,
-- 3 canceled before, 4 acked (its result kept), 5 dead, 0 unknown;
-- canceled counts the items this call canceled, running those of them
-- leased; fence is how long, ms, the caller waits before it returns, so
-- that a drain holding a leased item never starts it after that: the
-- whole fence when this call ended a lease, what is left of it when an
-- earlier call canceled an item (its record's score, less the retention,
-- is when), else 0.
-- A canceled item loses its value, its lease (and its place in its
-- type's limits: types.lua), its delay; its attempt
-- count, cause, ready time, own limit, lane and trace context; its id goes to canceled,
-- which Wait, Chain and Join read, and which a drain running it polls;
-- its waiters wake (and a drain that claimed it and has not started it
-- never does once the caller waited out the fence: see StartFence in
-- cancel.go). A unique key it held is free, as its holder has no
-- value (unique.lua). A pending or set-aside id stays in its list as a
-- tombstone, so that a cancel costs O(1) whatever the list's length: the
-- claim that meets it drops it (claim.lua, claimtyped.lua).
-- Claim, Settle and Cancel are scripts, so Redis runs one after the
-- other: a claim after a cancel finds nothing; a settle after it finds
-- its claim no longer current and changes nothing (settle.lua reports it
-- canceled); a cancel after an ack or a dead-lettering finds the item
-- finished (4 or 5) and changes nothing. Each call drops up to 10
-- expired canceled records; the key expires with its last.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local id, retention, ttl, fenceMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local fence = 0
local tag = tagOf(KEYS[1])
local lanes = tag .. ':lanes'

local old = redis.call('ZRANGEBYSCORE', KEYS[11], '-inf', now, 'LIMIT', 0, 10)
if #old > 0 then
  redis.call('ZREM', KEYS[11], unpack(old))
end

-- The items to cancel, the one that names the whole last; inList[i] is
-- false for a join's final item that waits, in no list, for children.
local targets, inList = {}, {}
local join = string.match(id, '^([^.]+)%.%d+$') or id
local rec = redis.call('HMGET', tag .. ':join:' .. join, 'left', 'total')
local left, total = tonumber(rec[1]), tonumber(rec[2])
if total then
  for i = 1, total do
    targets[i] = join .. '.' .. i
    inList[i] = true
  end
  targets[total + 1] = join
  inList[total + 1] = left == 0
  redis.call('PEXPIRE', tag .. ':join:' .. join, retention)
else
  local current = redis.call('HGET', tag .. ':chain:' .. id, 'id')
  targets[1] = current or id
  inList[1] = true
end

local function cancelOne(x, listed)
  if redis.call('HEXISTS', KEYS[2], x) == 0 then
    local kept = tonumber(redis.call('ZSCORE', KEYS[11], x))
    if kept then
      local left = kept - retention + fenceMs - now
      fence = math.max(fence, math.min(math.max(left, 0), fenceMs))
      return 3
    end
    local stored = redis.call('HGET', KEYS[9], x)
    local at = stored and tonumber(string.match(stored, '^(%d+):'))
    if at and at > now then
      return 4
    end
    if redis.call('ZSCORE', KEYS[7], x) then
      return 5
    end
    return 0
  end
  if redis.call('ZSCORE', KEYS[7], x) then
    return 5 -- a dead letter keeps its value, for a requeue
  end
  local code = 1
  local count = redis.call('HGET', KEYS[3], x)
  if count and string.find(count, '-', 1, true) then
    -- Leased: its handler's settle will find its claim gone.
    redis.call('ZREM', KEYS[1], x)
    letGo(tag, {x}, nil, nil)
    fence = fenceMs
    code = 2
  elseif redis.call('ZREM', KEYS[6], x) == 0 and listed then
    redis.call('SADD', KEYS[12], x)
  end
  redis.call('ZADD', KEYS[11], now + retention, x)
  for _, k in ipairs({KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[10], lanes}) do
    redis.call('HDEL', k, x)
  end
  if anyTraces(tag) then
    dropTraces(tag, {x})
  end
  if redis.call('HDEL', KEYS[8], x) == 1 then
    local wake = tag .. ':notify:' .. x
    if redis.call('EXISTS', wake) == 0 then
      redis.call('RPUSH', wake, '1')
    end
    redis.call('PEXPIRE', wake, ttl)
  end
  return code
end

local code, canceled, running = 0, 0, 0
for i, x in ipairs(targets) do
  code = cancelOne(x, inList[i])
  if code == 1 or code == 2 then
    canceled = canceled + 1
  end
  if code == 2 then
    running = running + 1
  end
end
if canceled > 0 and redis.call('PTTL', KEYS[11]) < retention then
  redis.call('PEXPIRE', KEYS[11], retention)
end
return {code, canceled, running, fence}
