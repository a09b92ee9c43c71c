-- needs: maintain
-- The leases of one claim, for claim.lua and claimtyped.lua: which
-- entries of pending it drops, what it leases and dead-letters, and its
-- reply (claim.lua's header says its form).

-- newClaim starts the claim of c: deadline (ms), deadlineText, nowText,
-- suffix (the claim's "-number"), pin (the encoding pin), promoted and
-- recovered, tombstones (the canceled ids' set), report (the list of the
-- dead letters it makes: reportDead in maintain.lua). It returns the claim:
-- got, how many it leased; tombstoned, whether it dropped a canceled
-- item's tombstone; out, its reply; and its functions:
--   admit(id, value, count, delayed, buried) says whether the entry is an
--     item to lease. A duplicate (already leased, delayed, dead or met
--     earlier in this claim, or the empty id, which names the pin) is
--     dropped; so is a canceled item's tombstone (see cancel.lua); an id
--     without a value is dead-lettered.
--   lease(id, value, count, limit, lane) leases it, its limit of attempts
--     its own when limit is one, its priority lane's name when lane is
--     one other than 'default', and returns its token.
--   writeLeases(leases, attempts) and writeDead(dead, causes) write them.
--   reply() is the claim's reply: out, then the lanes of the leased items
--     not in the default lane, (index from 1, priority) pairs.
local function newClaim(c)
  local claim = {got = 0, tombstoned = false}
  local own, nown = {}, 0
  local lanes, nlanes = {}, 0
  local out, nout = {c.deadline, c.promoted, c.recovered, c.suffix, own, 0}, 6
  claim.out = out
  -- The pin goes first: Redis picks a new key's encoding by it, and moves
  -- an existing small key to the faster encoding before the batch goes in.
  local leases, attempts, nleases = {'+inf', c.pin}, {'', c.pin}, 2
  local dead, causes, ndead = {}, {}, 0
  local tokenOf, seen = {}, {} -- tokenOf: attempt → token, made once
  local deadlineText, nowText, suffix, tombstones = c.deadlineText, c.nowText, c.suffix, c.tombstones

  function claim.admit(id, value, count, delayed, buried)
    -- A count with a token ("attempt-number") is a live lease.
    local leased = count and string.find(count, '-', 1, true)
    if seen[id] or leased or delayed or buried or id == '' then
      return false
    end
    seen[id] = true
    if value then
      return true
    end
    if redis.call('SREM', tombstones, id) == 1 then
      claim.tombstoned = true
      return false
    end
    dead[ndead + 1] = nowText
    dead[ndead + 2] = id
    causes[ndead + 1] = id
    causes[ndead + 2] = 'malformed: pending id has no stored value'
    ndead = ndead + 2
    reportDead(c.report, id, nil, tonumber(count) or 0, 0, causes[ndead])
    return false
  end

  function claim.lease(id, value, count, limit, lane)
    local got = claim.got + 1
    claim.got = got
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
    out[nout + 2] = value
    out[nout + 3] = attempt
    nout = nout + 3
    -- A malformed limit is the queue's, as settle reads it.
    limit = limit and tonumber(limit)
    if limit then
      own[nown + 1] = got
      own[nown + 2] = limit
      nown = nown + 2
    end
    if lane and lane ~= 'default' then
      lanes[nlanes + 1] = got
      lanes[nlanes + 2] = lane
      nlanes = nlanes + 2
    end
    return token
  end

  function claim.reply()
    out[#out + 1] = lanes
    return out
  end

  function claim.writeLeases(leasesKey, attemptsKey)
    if claim.got > 0 then
      redis.call('ZADD', leasesKey, unpack(leases))
      redis.call('HSET', attemptsKey, unpack(attempts))
    end
  end

  function claim.writeDead(deadKey, causesKey)
    if ndead > 0 then
      redis.call('ZADD', deadKey, unpack(dead))
      redis.call('HSET', causesKey, unpack(causes))
    end
  end

  return claim
end
