-- needs: expired, unique, types, lanes, traces
-- Settle: ack or nack claimed items whose claim token is still current.
-- KEYS[1]: leases (zset)   KEYS[2]: values (hash)    KEYS[3]: attempts (hash)
-- KEYS[4]: ready (hash)    KEYS[5]: causes (hash)    KEYS[6]: delayed (zset)
-- KEYS[7]: dead (zset)     KEYS[8]: waiting (hash)   KEYS[9]: results (hash)
-- KEYS[10]: expiring (list)   KEYS[11]: limits (hash)   KEYS[12]: pending
-- (list), for follow-ups
-- then per item i (from 1): KEYS[12+i] its wake-up list (in the queue's
-- hash tag); then the chain records of follow-ups, if any; then, for each
-- item that is a join's child (its id is "JOIN.n"), in the items' order,
-- the join's record and the wake-up list of its final item JOIN.
-- ARGV[1]: result retention ms   ARGV[2]: wake-up list ttl ms
-- ARGV[3]: max attempts   ARGV[4]: the encoding pin (see encodingPin in
-- store.go), the field "" of results
-- then per item, a group of 5: id, claim token, its kind ('a' an ack, 'n'
-- a nack, 'd' a nack that dead-letters now, 's' a snooze, 't' an ack with
-- a follow-up), "token:result" (ack), the cause (nack) or "most:cause"
-- (snooze), the retry backoff or the snooze in ms (an ack ignores it).
-- A snooze delays the item without counting its attempt, up to most times
-- in its life, counted in the hash tag..':snoozes' (id → count); one past
-- them is a nack with that cause. The count goes with the item's ack or
-- dead letter, and the hash as a whole a week after its last snooze is
-- due (for items that went otherwise: purged, canceled, or acked by the
-- previous release, which knows no snoozes). An item of
-- kind 't' is followed by a group of 7, its follow-up: the new item's id,
-- its payload, the index in KEYS of the chain record the ack moves on (0:
-- none; chain records and unique keys' locks come after the wake-up
-- lists), the step and the steps of the chain the new item is (see
-- Store.Chain), and the index in KEYS of the unique key's lock that the
-- ack hands on to it if the acked item holds it (0: none), and its trace
-- context ('': none; traces.lua).
-- The kind alone tells an ack from a nack: a nack's backoff that is not a
-- finite number >= 0 counts as 0 (retry at once). Any other kind, or
-- groups cut short, is an error raised before anything is written:
-- nothing changes, for the other items of the call either.
-- A follow-up is enqueued (pending, value, ready) only by the ack that
-- the script applies: an ack whose claim is no longer current, or a
-- resent ack, enqueues nothing, so a follow-up is added once. Its chain
-- record, a hash (id, step, steps), is set to it and expires after the
-- result retention. It inherits the acked item's own attempt limit.
-- The ack of a join's child that the script applies counts the join's
-- record down (left), once; the one that takes it to 0 pushes the final
-- item, whose value EnqueueJoin stored, to pending, and makes the record
-- expire after the result retention. A child dead-lettered here wakes
-- the final item's waiters, for whom the join has failed (state.lua).
-- At most BatchMax items. Returns one code per item: 1 acked, 2 delayed
-- for a retry or a snooze, 3 dead-lettered, 4 canceled (cancel.lua ended
-- its claim), 0 claim no longer current otherwise (nothing done either
-- way).
-- An acked result is stored as "expiry ms:token:result" in results, and
-- "expiry ms:id" is appended to expiring, in expiry order; each call first
-- drops up to 2 per item of the results that expired (so results cannot
-- pile up while the queue is in use), and both keys expire as a whole
-- after the last result in them (so they go away when it is not).
-- Redis does not roll back a failed script, so each item is added to its
-- new place before it is taken from the old: a failure can leave it in two
-- places (which Claim and Tidy resolve), never in none.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local retention, ttl, maxAttempts = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

local function wake(key)
  if redis.call('EXISTS', key) == 0 then
    redis.call('RPUSH', key, '1')
  end
  redis.call('PEXPIRE', key, ttl)
end

-- ids[i] is item i's id, base[i] the index in ARGV of its group.
local ids, base = {}, {}
local g = 5
while g <= #ARGV do
  if g + 4 > #ARGV then
    return redis.error_reply('ERR settle: ' .. (#ARGV - g + 1) .. ' item arguments, not a group of 5')
  end
  local kind = ARGV[g + 2]
  if kind ~= 'a' and kind ~= 'n' and kind ~= 't' and kind ~= 'd' and kind ~= 's' then
    return redis.error_reply('ERR settle: unknown kind "' .. kind .. '" of item ' .. ARGV[g])
  end
  ids[#ids + 1] = ARGV[g]
  base[#ids] = g
  if kind == 't' then
    local key = tonumber(ARGV[g + 7])
    local lock = tonumber(ARGV[g + 10])
    if g + 11 > #ARGV or not key or (key ~= 0 and not KEYS[key]) or not lock or (lock ~= 0 and not KEYS[lock]) then
      return redis.error_reply('ERR settle: item ' .. ARGV[g] .. ' has no follow-up group')
    end
    g = g + 12
  else
    g = g + 5
  end
end

-- jkey[i] is the index in KEYS of the join record of item i, a child.
local jkey, nchild = {}, 0
for i, id in ipairs(ids) do
  -- A plain find first: the pattern costs about 0.3 µs an id.
  if string.find(id, '.', 1, true) and string.find(id, '^[^.]+%.') then
    nchild = nchild + 1
    jkey[i] = nchild
  end
end
local jbase = #KEYS - 2 * nchild - 1
if jbase < 11 + #ids then
  return redis.error_reply('ERR settle: ' .. nchild .. ' children of joins without their keys')
end
for i in pairs(jkey) do
  jkey[i] = jbase + 2 * jkey[i]
end

-- Attempt limits of items enqueued with their own (EnqueueOptions.
-- MaxAttempts); the others have ARGV[3]. A queue that never had one has no
-- limits key, and its nacks look nothing up.
-- The same EXISTS says whether any item is held in its task type's limits
-- (types.lua), whether any has a priority (lanes.lua), whether any
-- snoozed, and whether any may have a trace context (traces.lua): it
-- counts a key named k times k times.
local tag = tagOf(KEYS[1])
local lanesKey, snoozesKey = tag .. ':lanes', tag .. ':snoozes'
local traced = tag .. ':traced'
local flags = redis.call('EXISTS', KEYS[11], tag .. ':holding', tag .. ':holding', lanesKey, lanesKey, lanesKey, lanesKey,
  snoozesKey, snoozesKey, snoozesKey, snoozesKey, snoozesKey, snoozesKey, snoozesKey, snoozesKey,
  traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced, traced)
local anyTraced = flags >= 16
flags = flags % 16
local hasLimits = flags % 2 == 1
local held = flags % 4 >= 2
local laned = flags % 8 >= 4 -- lanes.lua
local snoozed = flags >= 8
-- A week: how long the snooze counts outlive the due time of the last.
local snoozesKept = 7 * 24 * 3600 * 1000
local function limitOf(id)
  return hasLimits and tonumber(redis.call('HGET', KEYS[11], id)) or maxAttempts
end

-- Expired results first, at most 2 per item.
dropExpired(KEYS[9], KEYS[10], now, 2 * #ids)

local current = redis.call('HMGET', KEYS[3], unpack(ids))
-- Most items have no waiter: an empty waiting hash spares the lookup.
local waited = {}
if redis.call('EXISTS', KEYS[8]) == 1 then
  waited = redis.call('HMGET', KEYS[8], unpack(ids))
end
-- "expiry ms:", made once: Lua turns a number into a string slowly.
local prefix = tostring(now + retention) .. ':'
local codes, seen = {}, {}
local acked, results, expiring, woken = {}, {'', ARGV[4]}, {}, {}
-- Acked items that may have a cause: only a nack, a lease expired at the
-- last attempt, or a malformed entry leave one, and each of those leaves
-- a count of at least 1, so an item acked at its first attempt has none.
local retried = {}
local settled, counts, causes, delays, dead, deadIds = {}, {}, {}, {}, {}, {}
-- Counters rather than #t on the acks' path: # searches the table.
local nsettled, acks = 0, 0
-- The ARGV indices of the follow-up groups of the acks applied.
local thens, nthen = {}, 0
-- The items, children of joins, acked or dead-lettered here.
local joinAcks, joinDead = {}, {}
for i, id in ipairs(ids) do
  local b = base[i]
  local token, kind, data = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local ack = kind == 'a' or kind == 't'
  local code = 0
  -- The attempts field is the token "attempt-claim" while leased and the
  -- bare count otherwise, which is no token even when sent as one.
  if current[i] == token and not seen[id] and string.find(token, '-', 1, true) then
    seen[id] = true -- a second outcome for the same claim changes nothing
    nsettled = nsettled + 1
    settled[nsettled] = id
    if ack then
      acks = acks + 1
      acked[acks] = id
      if string.sub(token, 1, 2) ~= '1-' then
        retried[#retried + 1] = id
      end
      results[2 * acks + 1] = id -- after the pin
      results[2 * acks + 2] = prefix .. data
      expiring[acks] = prefix .. id
      if jkey[i] then
        joinAcks[#joinAcks + 1] = i
      end
      if kind == 't' then
        nthen = nthen + 1
        thens[nthen] = b + 5
      end
      if waited[i] then
        wake(KEYS[12 + i])
        woken[#woken + 1] = id
      end
      code = 1
    else
      -- The token is "attempt-claim"; a malformed one dead-letters the
      -- item, never loops it.
      local limit = limitOf(id)
      local counted = tonumber(string.match(token, '^(%d+)-'))
      local attempt = counted or limit
      local backoff = tonumber(ARGV[b + 4])
      -- Go sends whole ms >= 0; anything else (no number, NaN, a negative
      -- or an infinite one) retries at once.
      if not (backoff and backoff >= 0 and backoff < math.huge) then
        backoff = 0
      end
      local snooze = false
      if kind == 's' then
        local most, cause = string.match(data, '^(%d+):(.*)$')
        local n = tonumber(redis.call('HGET', snoozesKey, id)) or 0
        snooze = counted and most and n < tonumber(most)
        if snooze then
          redis.call('HSET', snoozesKey, id, n + 1)
          snoozed = true
          if redis.call('PTTL', snoozesKey) < backoff + snoozesKept then
            redis.call('PEXPIRE', snoozesKey, backoff + snoozesKept)
          end
          -- The attempt is given back: the next claim counts it again.
          attempt = attempt - 1
        end
        data = cause or data
      end
      if not snooze then
        causes[#causes + 1] = id
        causes[#causes + 1] = data
      end
      if not snooze and (kind == 'd' or attempt >= limit) then
        dead[#dead + 1] = now
        dead[#dead + 1] = id
        deadIds[#deadIds + 1] = id
        if jkey[i] then
          joinDead[#joinDead + 1] = i
        end
        if waited[i] then
          wake(KEYS[12 + i])
          woken[#woken + 1] = id
        end
        code = 3
      else
        delays[#delays + 1] = now + backoff
        delays[#delays + 1] = id
        code = 2
      end
      -- The count stays, the token goes: the item is no longer leased.
      counts[#counts + 1] = id
      counts[#counts + 1] = attempt
    end
  elseif ack and not seen[id] then
    local stored = redis.call('HGET', KEYS[9], id)
    -- "expiry ms:token:result"; tokens have no ':'.
    local at, rest = string.match(stored or '', '^(%d+):(.*)$')
    if at and tonumber(at) > now and string.match(rest, '^[^:]*') == token then
      code = 1 -- this claim's ack, resent
    end
  end
  if code == 0 and redis.call('ZSCORE', tag .. ':canceled', id) then
    code = 4 -- canceled while it ran (cancel.lua)
  end
  codes[i] = code
end

if nthen > 0 then
  -- Added before the acked items are taken from their places (below).
  redis.call('LLEN', KEYS[12]) -- fails on a malformed pending list before these writes
  local now_s = tostring(now)
  local values, ready, newIds, froms = {}, {}, {}, {}
  for j, at in ipairs(thens) do
    local nid = ARGV[at]
    newIds[j] = nid
    values[2 * j - 1], values[2 * j] = nid, ARGV[at + 1]
    ready[2 * j - 1], ready[2 * j] = nid, now_s
    local key = tonumber(ARGV[at + 2])
    if key > 0 then
      redis.call('HSET', KEYS[key], 'id', nid, 'step', ARGV[at + 3], 'steps', ARGV[at + 4])
      redis.call('PEXPIRE', KEYS[key], retention)
    end
    local from = ARGV[at - 5] -- the acked item
    froms[j] = from
    local limit = hasLimits and redis.call('HGET', KEYS[11], from)
    if limit then
      redis.call('HSET', KEYS[11], nid, limit)
    end
    -- The lock keeps its lifetime: it bounds the whole chain's hold.
    local lock = tonumber(ARGV[at + 5])
    if lock > 0 then
      handUnique(KEYS[lock], from, nid)
    end
    if ARGV[at + 6] ~= '' then
      writeTraces(tag, {nid}, ARGV[at + 6], 0)
    end
  end
  redis.call('HSET', KEYS[2], unpack(values))
  -- A follow-up has the acked item's priority (lanes.lua).
  if laned then
    local of = redis.call('HMGET', lanesKey, unpack(froms))
    local inherit = {}
    for j, p in ipairs(newIds) do
      if of[j] then
        inherit[#inherit + 1] = p
        inherit[#inherit + 1] = of[j]
      end
    end
    if #inherit > 0 then
      redis.call('HSET', lanesKey, unpack(inherit))
    end
  end
  pushPending(KEYS[12], 'LPUSH', newIds, laned)
  redis.call('HSET', KEYS[4], unpack(ready))
end
for _, i in ipairs(joinAcks) do
  local rec = KEYS[jkey[i]]
  local left = tonumber(redis.call('HGET', rec, 'left'))
  if left and left > 0 then
    redis.call('HSET', rec, 'left', left - 1)
    if left == 1 then
      local join = string.match(ids[i], '^([^.]+)%.')
      if redis.call('HEXISTS', KEYS[2], join) == 1 then
        pushPending(KEYS[12], 'LPUSH', {join}, laned)
        redis.call('HSET', KEYS[4], join, tostring(now))
      end
      redis.call('PEXPIRE', rec, retention)
    end
  end
end
for _, i in ipairs(joinDead) do
  local join = string.match(ids[i], '^([^.]+)%.')
  if redis.call('HGET', KEYS[8], join) then
    wake(KEYS[jkey[i] + 1])
    redis.call('HDEL', KEYS[8], join)
  end
end
if #acked > 0 then
  redis.call('HSET', KEYS[9], unpack(results))
  redis.call('RPUSH', KEYS[10], unpack(expiring))
  for _, k in ipairs({KEYS[9], KEYS[10]}) do
    if redis.call('PTTL', k) < retention then
      redis.call('PEXPIRE', k, retention)
    end
  end
end
if #counts > 0 then
  if #delays > 0 then
    redis.call('ZADD', KEYS[6], unpack(delays))
  end
  if #dead > 0 then
    redis.call('ZADD', KEYS[7], unpack(dead))
  end
  if #causes > 0 then
    redis.call('HSET', KEYS[5], unpack(causes))
  end
  redis.call('HSET', KEYS[3], unpack(counts))
end
if #settled > 0 then
  redis.call('ZREM', KEYS[1], unpack(settled))
  letGo(tag, settled, nil, held) -- see types.lua
end
if #deadIds > 0 then
  redis.call('HDEL', KEYS[4], unpack(deadIds))
  if snoozed then
    redis.call('HDEL', snoozesKey, unpack(deadIds))
  end
end
if #woken > 0 then
  redis.call('HDEL', KEYS[8], unpack(woken))
end
if #acked > 0 then
  for _, k in ipairs({KEYS[2], KEYS[3], KEYS[4]}) do
    redis.call('HDEL', k, unpack(acked))
  end
  if #retried > 0 then
    redis.call('HDEL', KEYS[5], unpack(retried))
  end
  if hasLimits then
    redis.call('HDEL', KEYS[11], unpack(acked))
  end
  if laned then
    redis.call('HDEL', lanesKey, unpack(acked))
  end
  if snoozed then
    redis.call('HDEL', snoozesKey, unpack(acked))
  end
  if anyTraced then
    dropTraces(tag, acked)
  end
end
return codes
