-- needs: expired, types, maintain, lease, claimtyped, traces
-- Claim: bring back what is due and what expired, then lease up to n
-- items from the head (right end) of pending (doc.go says how).
-- KEYS[1]: pending (list)    KEYS[2]: leases (zset)    KEYS[3]: values (hash)
-- KEYS[4]: attempts (hash)   KEYS[5]: seq (counter)    KEYS[6]: delayed (zset)
-- KEYS[7]: dead (zset)       KEYS[8]: causes (hash)    KEYS[9]: limits (hash)
-- KEYS[10]: ready (hash)     KEYS[11]: results (hash)  KEYS[12]: expiring (list)
-- ARGV[1]: n, at most BatchMax   ARGV[2]: lease length in ms
-- ARGV[3]: the encoding pin (see encodingPin in store.go): the member of
-- leases scored +inf, the field "" of attempts
-- ARGV[4]: max attempts, for expired leases without a limit of their own
-- Returns {deadline ms, promoted, recovered, "-number" of this claim,
-- limits, more, then id, payload, attempt per item, then lanes}, or its first three
-- alone when nothing is pending: promoted and recovered count what the
-- maintenance brought back, up to n of each (Promote's and Tidy's rules);
-- limits lists the items with a limit of their own (EnqueueOptions.
-- MaxAttempts) as pairs of their index (1 for the first) and the limit,
-- and is empty when none has one; lanes lists the items claimed from a
-- priority's lane other than the default one, as pairs of their index and
-- the priority, and is empty when none was. An item's token is its attempt followed
-- by that "-number"; its attempts field holds the token while it is
-- leased, and only the count otherwise. more is 1 when items were set
-- aside (limits per type) up to the bound on what one call looks at, or
-- canceled items' tombstones dropped with fewer than n leased, so that
-- more may be claimable behind them; else 0. The deadline is TIME rounded
-- up to the ms, plus the lease; a lease is taken back once TIME reaches
-- it. A failed call (a key of the wrong type) leaves pending's items
-- pending, never lost.
-- When any leased item has a trace context (traces.lua), the reply ends
-- with one more value after the lanes: the list of (index from 1, trace
-- context) pairs of those items. When the call dead-lettered items (an
-- expired lease at its last attempt, a pending id without a value), any
-- reply ends with the list "dead", then id, value, attempt, limit, cause
-- of each (reportDead in maintain.lua).
-- KEYS[3] is passed to handBackExpired as values, for that list.
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
local report = {'dead'}
local recovered = handBackExpired({
  leases = KEYS[2], attempts = KEYS[4], pending = KEYS[1], dead = KEYS[7],
  causes = KEYS[8], ready = KEYS[10], limits = KEYS[9], values = KEYS[3], report = report,
}, nowText, n, tonumber(ARGV[4]))
-- withDead ends out with the dead letters' list, if the call made any.
local function withDead(out)
  if #report > 1 then
    out[#out + 1] = report
  end
  return out
end

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
  return withDead({deadline, promoted, recovered})
end
-- One claim number for the whole call: a token only has to differ from
-- the item's earlier claims. INCR fails on a malformed counter before any
-- other write.
local suffix = string.format('-%d', redis.call('INCR', KEYS[5]))
local deadlineText = tostring(deadline)
local claim = newClaim({
  deadline = deadline, deadlineText = deadlineText, nowText = nowText, suffix = suffix,
  pin = ARGV[3], promoted = promoted, recovered = recovered, tombstones = tag .. ':tombstones',
  report = report,
}) -- lease.lua
local looked = 0
-- A healthy queue has nothing delayed or dead: then no lookups there.
-- (Read after the maintenance, which empties the one and fills the other.)
local anyDelayed = redis.call('EXISTS', KEYS[6]) == 1
local anyDead = redis.call('EXISTS', KEYS[7]) == 1
-- The same EXISTS says whether any item may have a trace context.
local traced = tag .. ':traced'
local limitsOrTyped = redis.call('EXISTS', KEYS[9], tag .. ':typelimits', tag .. ':typelimits', traced, traced, traced, traced)
local anyTraced = limitsOrTyped >= 4
limitsOrTyped = limitsOrTyped % 4
local anyLimits = limitsOrTyped % 2 == 1
if limitsOrTyped >= 2 or anyParked or weighted then
  local out = claimTyped(claim, {
    n = n, now = now, nowText = nowText, deadlineText = deadlineText, tag = tag,
    typed = limitsOrTyped >= 2, anyParked = anyParked, weighted = weighted,
    anyDelayed = anyDelayed, anyDead = anyDead, anyLimits = anyLimits,
  }) -- claimtyped.lua
  if anyTraced then
    withTraces(out, tag, claim.got)
  end
  return withDead(out)
end
-- Malformed entries are looked at too, their places refilled once: at
-- most 2n entries.
local admit, lease = claim.admit, claim.lease
for _ = 1, 2 do
  local want = n - claim.got
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
    if admit(ids[i], values[i], counts[i], delayed[i], buried[i]) then
      lease(ids[i], values[i], counts[i], limits[i])
    end
  end
  if #ids < want then
    break -- pending is exhausted
  end
end
-- Added to their new places before they are taken from pending.
claim.writeLeases(KEYS[2], KEYS[4])
claim.writeDead(KEYS[7], KEYS[8])
redis.call('LTRIM', KEYS[1], 0, -(looked + 1))
if claim.tombstoned and claim.got < n then
  claim.out[6] = 1 -- a run of tombstones may hide items behind it
end
local out = claim.reply()
if anyTraced then
  withTraces(out, tag, claim.got)
end
return withDead(out)
