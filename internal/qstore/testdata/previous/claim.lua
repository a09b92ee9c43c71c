-- Claim: bring back what is due and what expired, then lease up to n
-- items from the head (right end) of pending.
-- KEYS[1]: pending (list)    KEYS[2]: leases (zset)    KEYS[3]: values (hash)
-- KEYS[4]: attempts (hash)   KEYS[5]: seq (counter)    KEYS[6]: delayed (zset)
-- KEYS[7]: dead (zset)       KEYS[8]: causes (hash)    KEYS[9]: limits (hash)
-- KEYS[10]: ready (hash)     KEYS[11]: results (hash)  KEYS[12]: expiring (list)
-- ARGV[1]: n, at most BatchMax   ARGV[2]: lease length in ms
-- ARGV[3]: the encoding pin (see encodingPin in store.go): the member of
-- leases scored +inf, the field "" of attempts
-- ARGV[4]: max attempts, for expired leases without a limit of their own
-- Returns {deadline ms, promoted, recovered, "-number" of this claim,
-- limits, more, then id, payload, attempt per item}, or its first three
-- alone when nothing is pending: promoted and recovered count what the
-- maintenance brought back (below); limits lists the items with a limit
-- of their own (EnqueueOptions.MaxAttempts) as pairs of their index (1
-- for the first) and the limit, and is empty when none has one. An item's
-- token is its attempt followed by that "-number"; its attempts field
-- holds the token while it is leased, and only the count otherwise. more
-- is 1 when items were set aside (below) up to the bound on what one call
-- looks at, or canceled items' tombstones dropped with fewer than n
-- leased, so that more may be claimable behind them; else 0.
-- The deadline is TIME rounded up to the ms, plus the lease: rounded
-- down, a lease could start up to 1ms before the script runs, and end
-- before a client that counts it from when it sent the claim expects.
-- (A lease is taken back once TIME reaches its deadline.)
-- Maintenance comes first, so that whoever claims a queue keeps it
-- moving, and what it brings back can be claimed by this same call: up to
-- n delayed items that are due are promoted (Promote's rules), up to n
-- expired leases are handed back or dead-lettered at their last attempt
-- (Tidy's), and up to n expired results dropped (Tidy's too): see
-- maintain.lua and expired.lua, which Go prepends. Bounded by n, a claim's
-- work grows with what its caller asked for, and it never brings back
-- more than one claim can take. With nothing due or expired it costs one
-- ZRANGEBYSCORE on leases, one on delayed if it exists, and one LINDEX.
-- Malformed entries do not stop it: an id already leased, delayed, dead or
-- met earlier in this call is a duplicate and is dropped (so is the empty
-- id, which names the pin, and a canceled item's tombstone: see
-- cancel.lua); one without a value is dead-lettered. Their
-- places are refilled once, so at most 2n entries are looked at.
-- Redis does not roll back a script that fails half-way (a key of the
-- wrong type), so ids are only peeked at first and trimmed from pending
-- last: a failure leaves them pending, never lost.
-- Cost: one bulk command per structure, and no number turned into a string
-- per item (Lua's tostring is dearer than most Redis commands here).
-- Task types with limits (types.lua, which Go prepends, names their keys):
-- an item whose type is over its limit is set aside (parked) with its
-- attempt uncounted, so that the items behind it are claimed; parked
-- items of a type are claimed before its pending ones once it is under
-- its limit again. Such a claim, and that of a queue with priorities,
-- is claimTyped (claimtyped.lua); it looks at up to 4n pending entries. A
-- queue without limits pays nothing for them: whether it has any rides on
-- the EXISTS calls it makes anyway (EXISTS counts a key named twice
-- twice, so one call tells two keys apart).
local n = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local deadline = t[1] * 1000 + math.ceil(t[2] / 1000) + tonumber(ARGV[2])
local nowText = tostring(now)
local tag = tagOf(KEYS[2])
local parkedTypes = tag .. ':parked'

local weights = tag .. ':weights'
local promoted = 0
local flags = redis.call('EXISTS', KEYS[6], parkedTypes, parkedTypes, weights, weights, weights, weights)
if flags % 2 == 1 then
  promoted = promoteDue(KEYS[6], KEYS[1], KEYS[10], nowText, n)
end
local anyParked = flags % 4 >= 2
local weighted = flags >= 4
dropExpired(KEYS[11], KEYS[12], now, n)
local recovered = handBackExpired({
  leases = KEYS[2], attempts = KEYS[4], pending = KEYS[1], dead = KEYS[7],
  causes = KEYS[8], ready = KEYS[10], limits = KEYS[9],
}, nowText, n, tonumber(ARGV[4]))

-- Nothing to claim: no claim number either, no write.
local function idle()
  if redis.call('LLEN', KEYS[1]) > 0 or anyParked then
    return false
  end
  if weighted then
    for _, p in ipairs(redis.call('HKEYS', weights)) do
      if p ~= 'default' and redis.call('LLEN', KEYS[1] .. ':' .. p) > 0 then
        return false
      end
    end
  end
  return true
end
if idle() then
  return {deadline, promoted, recovered}
end
-- One claim number for the whole call: a token only has to differ from
-- the item's earlier claims. INCR fails on a malformed counter before any
-- other write.
local suffix = string.format('-%d', redis.call('INCR', KEYS[5]))
local deadlineText = tostring(deadline)
local own, nown = {}, 0
local out, nout = {deadline, promoted, recovered, suffix, own, 0}, 6
-- The pin goes first: Redis picks a new key's encoding by it, and moves
-- an existing small key to the faster encoding before the batch goes in.
local leases, attempts, nleases = {'+inf', ARGV[3]}, {'', ARGV[3]}, 2
local dead, causes, ndead = {}, {}, 0
local tokenOf = {} -- attempt → token, built once per attempt count
local got, looked, seen = 0, 0, {}
local tombstones, tombstoned = tag .. ':tombstones', false
-- A healthy queue has nothing delayed or dead: then no lookups there.
-- (Read after the maintenance, which empties the one and fills the other.)
local anyDelayed = redis.call('EXISTS', KEYS[6]) == 1
local anyDead = redis.call('EXISTS', KEYS[7]) == 1
local limitsOrTyped = redis.call('EXISTS', KEYS[9], tag .. ':typelimits', tag .. ':typelimits')
local anyLimits = limitsOrTyped % 2 == 1
if limitsOrTyped >= 2 or anyParked or weighted then
  return claimTyped({
    n = n, now = now, nowText = nowText, deadline = deadline, deadlineText = deadlineText,
    tag = tag, suffix = suffix, pin = ARGV[3], promoted = promoted, recovered = recovered,
    typed = limitsOrTyped >= 2, anyParked = anyParked, weighted = weighted,
    anyDelayed = anyDelayed, anyDead = anyDead, anyLimits = anyLimits,
  }) -- claimtyped.lua
end
for _ = 1, 2 do
  local want = n - got
  if want == 0 then
    break
  end
  -- The want entries before the ones already looked at, head last.
  local ids = redis.call('LRANGE', KEYS[1], -(looked + want), -(looked + 1))
  if #ids == 0 then
    break
  end
  looked = looked + #ids
  local values = redis.call('HMGET', KEYS[3], unpack(ids))
  local counts = redis.call('HMGET', KEYS[4], unpack(ids))
  local delayed = anyDelayed and redis.call('ZMSCORE', KEYS[6], unpack(ids)) or {}
  local buried = anyDead and redis.call('ZMSCORE', KEYS[7], unpack(ids)) or {}
  local limits = anyLimits and redis.call('HMGET', KEYS[9], unpack(ids)) or {}
  for i = #ids, 1, -1 do
    local id, count = ids[i], counts[i]
    -- A count with a token ("attempt-number") is a live lease.
    local leased = count and string.find(count, '-', 1, true)
    if not (seen[id] or leased or delayed[i] or buried[i] or id == '') then
      seen[id] = true
      if values[i] then
        got = got + 1
        local attempt = (tonumber(count) or 0) + 1
        local token = tokenOf[attempt]
        if not token then
          token = attempt .. suffix
          tokenOf[attempt] = token
        end
        leases[nleases + 1] = deadlineText
        leases[nleases + 2] = id
        attempts[nleases + 1] = id
        attempts[nleases + 2] = token
        nleases = nleases + 2
        out[nout + 1] = id
        out[nout + 2] = values[i]
        out[nout + 3] = attempt
        nout = nout + 3
        -- A malformed limit is the queue's, as settle reads it.
        local limit = limits[i] and tonumber(limits[i])
        if limit then
          own[nown + 1] = got
          own[nown + 2] = limit
          nown = nown + 2
        end
      elseif redis.call('SREM', tombstones, id) == 1 then
        tombstoned = true -- canceled (cancel.lua)
      else
        dead[ndead + 1] = nowText
        dead[ndead + 2] = id
        causes[ndead + 1] = id
        causes[ndead + 2] = 'malformed: pending id has no stored value'
        ndead = ndead + 2
      end
    end
  end
  if #ids < want then
    break -- pending is exhausted
  end
end
if got > 0 then
  redis.call('ZADD', KEYS[2], unpack(leases))
  redis.call('HSET', KEYS[4], unpack(attempts))
end
if ndead > 0 then
  redis.call('ZADD', KEYS[7], unpack(dead))
  redis.call('HSET', KEYS[8], unpack(causes))
end
redis.call('LTRIM', KEYS[1], 0, -(looked + 1))
if tombstoned and got < n then
  out[6] = 1 -- a run of tombstones may hide items behind it
end
return out
