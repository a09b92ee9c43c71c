-- needs: types
-- claimTyped is the claim of a queue with limited task types, with items
-- set aside, or with priorities (claim.lua calls it; types.lua and
-- lanes.lua name their keys). claim is the claim claim.lua started
-- (newClaim, lease.lua); c is what claim.lua has read: n, now, nowText,
-- deadlineText, tag, and flags: typed (some type has a limit),
-- anyParked, weighted (priorities have weights), anyDelayed, anyDead,
-- anyLimits (items with their own attempt limits). It returns claim.lua's
-- reply.
local function claimTyped(claim, c)
  local n, now, nowText, tag = c.n, c.now, c.nowText, c.tag
  local typed, anyParked, weighted = c.typed, c.anyParked, c.weighted
  local anyDelayed, anyDead, anyLimits = c.anyDelayed, c.anyDead, c.anyLimits
  local parkedTypes, weights = tag .. ':parked', tag .. ':weights'
  local deadlineText = c.deadlineText
  -- Each limited type's limits, and what this call may still lease of it.
  local cfgs = {}
  if typed then
    local raw = redis.call('HGETALL', tag .. ':typelimits')
    for i = 1, #raw, 2 do
      local running, rate, per = string.match(raw[i + 1], '^(%d+) (%d+) (%d+)$')
      if running then
        cfgs[raw[i]] = {running = tonumber(running), rate = tonumber(rate), per = tonumber(per)}
      end
    end
  end
  -- limitOf returns the limits of typ with its room counted (leases that
  -- expired free their places, starts older than per leave the window),
  -- or nil when typ has none.
  local function limitOf(typ)
    local c = cfgs[typ]
    if not c then
      return nil
    end
    if not c.room then
      local room = math.huge
      if c.running > 0 then
        local key = tag .. ':running:' .. typ
        redis.call('ZREMRANGEBYSCORE', key, '-inf', nowText)
        room = c.running - redis.call('ZCARD', key)
      end
      if c.rate > 0 then
        local key = tag .. ':starts:' .. typ
        redis.call('ZREMRANGEBYSCORE', key, '-inf', now - c.per)
        room = math.min(room, c.rate - redis.call('ZCARD', key))
      end
      c.room = room
    end
    return c
  end

  local holding, running, starts, parked = {}, {}, {}, {}
  -- consider leases, drops or sets aside one entry, as the plain claim
  -- does (lease.lua), and counts its type's place.
  local function consider(id, value, count, delayed, buried, limit, lane)
    if not claim.admit(id, value, count, delayed, buried) then
      return
    end
    local typ = typed and typeOf(value)
    local c = typ and limitOf(typ)
    if c and c.room <= 0 then
      local p = parked[typ]
      if not p then
        p = {}
        parked[typ] = p
      end
      p[#p + 1] = id
      return
    end
    local token = claim.lease(id, value, count, limit, lane)
    if c then
      c.room = c.room - 1
      holding[#holding + 1] = id
      holding[#holding + 1] = typ
      if c.running > 0 then
        local r = running[typ] or {}
        running[typ] = r
        r[#r + 1] = deadlineText
        r[#r + 1] = id
      end
      if c.rate > 0 then
        local s = starts[typ] or {}
        starts[typ] = s
        s[#s + 1] = nowText
        s[#s + 1] = id .. ':' .. token
      end
    end
  end
  -- look considers set-aside ids, the head last, until n are leased; it
  -- returns how many it considered, from the head. Their lanes are read
  -- from the lanes hash: set aside, they left them.
  local function look(ids)
    local values = redis.call('HMGET', KEYS[3], unpack(ids))
    local counts = redis.call('HMGET', KEYS[4], unpack(ids))
    local delayed = anyDelayed and redis.call('ZMSCORE', KEYS[6], unpack(ids)) or {}
    local buried = anyDead and redis.call('ZMSCORE', KEYS[7], unpack(ids)) or {}
    local limits = anyLimits and redis.call('HMGET', KEYS[9], unpack(ids)) or {}
    local priorities = weighted and redis.call('HMGET', tag .. ':lanes', unpack(ids)) or {}
    local i = #ids
    while i >= 1 and claim.got < n do
      consider(ids[i], values[i], counts[i], delayed[i], buried[i], limits[i], priorities[i])
      i = i - 1
    end
    return #ids - i
  end

  -- Parked items first, each type's up to its room: they were ahead of
  -- its pending ones.
  local trims = {}
  if anyParked then
    for _, typ in ipairs(redis.call('SMEMBERS', parkedTypes)) do
      local want = n - claim.got
      if want == 0 then
        break
      end
      local c = limitOf(typ) -- nil: its limit was lifted
      if c then
        want = math.min(want, c.room)
      end
      if want > 0 then
        local key = parkedTypes .. ':' .. typ
        local ids = redis.call('LRANGE', key, -want, -1)
        if #ids > 0 then
          trims[key] = look(ids)
        end
      end
    end
  end

  -- Then pending, up to 4n entries in all, as many as n leases take:
  -- with priorities, from their lanes (lanes.lua) by a smooth weighted
  -- round robin whose credits swrr keeps from claim to claim, so that
  -- while every lane has items each gets its weight's share of the
  -- leases, every lane within a round of the weights' sum. An empty lane
  -- is left out of the round and banks no credit.
  local lanes = {{name = 'default', key = KEYS[1], weight = 1, looked = 0, credit = 0}}
  if weighted then
    local credits = {}
    local raw = redis.call('HGETALL', tag .. ':swrr')
    for i = 1, #raw, 2 do
      credits[raw[i]] = tonumber(raw[i + 1])
    end
    raw = redis.call('HGETALL', weights)
    for i = 1, #raw, 2 do
      local w = math.max(tonumber(raw[i + 1]) or 1, 1)
      if raw[i] == 'default' then
        lanes[1].weight = w
      else
        lanes[#lanes + 1] = {name = raw[i], key = KEYS[1] .. ':' .. raw[i], weight = w, looked = 0}
      end
    end
    for _, l in ipairs(lanes) do
      l.credit = credits[l.name] or 0
    end
  end
  local looked, bound = 0, 4 * n
  -- refill peeks at the next entries of lane l, looks them up, and marks
  -- the lane done when it has none.
  local function refill(l)
    local want = math.min(n - claim.got, bound - looked)
    local ids = redis.call('LRANGE', l.key, -(l.looked + want), -(l.looked + 1))
    if #ids == 0 then
      l.done = true
      return
    end
    l.ids, l.pos, l.last = ids, #ids, #ids < want
    l.values = redis.call('HMGET', KEYS[3], unpack(ids))
    l.counts = redis.call('HMGET', KEYS[4], unpack(ids))
    l.delayed = anyDelayed and redis.call('ZMSCORE', KEYS[6], unpack(ids)) or {}
    l.buried = anyDead and redis.call('ZMSCORE', KEYS[7], unpack(ids)) or {}
    l.limits = anyLimits and redis.call('HMGET', KEYS[9], unpack(ids)) or {}
  end
  while claim.got < n and looked < bound do
    local best, total = nil, 0
    for _, l in ipairs(lanes) do
      if not l.done then
        total = total + l.weight
        if not best or l.credit + l.weight > best.credit + best.weight then
          best = l
        end
      end
    end
    if not best then
      break
    end
    if not best.pos or best.pos == 0 then
      if best.last then
        best.done = true
      else
        refill(best)
      end
    end
    if best.done then
      best.credit = 0
    else
      local i = best.pos
      best.pos, best.looked, looked = i - 1, best.looked + 1, looked + 1
      local before = claim.got
      consider(best.ids[i], best.values[i], best.counts[i], best.delayed[i], best.buried[i], best.limits[i], best.name)
      if claim.got > before then
        for _, l in ipairs(lanes) do
          if not l.done then
            l.credit = l.credit + l.weight
          end
        end
        best.credit = best.credit - total
      end
    end
  end
  if claim.got < n and (looked >= bound or claim.tombstoned) then
    claim.out[6] = 1
  end

  -- Added to their new places before they are taken from the old ones.
  claim.writeLeases(KEYS[2], KEYS[4])
  if #holding > 0 then
    redis.call('HSET', tag .. ':holding', unpack(holding))
  end
  for typ, r in pairs(running) do
    redis.call('ZADD', tag .. ':running:' .. typ, unpack(r))
  end
  for typ, s in pairs(starts) do
    local key = tag .. ':starts:' .. typ
    redis.call('ZADD', key, unpack(s))
    redis.call('PEXPIRE', key, cfgs[typ].per + 1000) -- gone once it is idle
  end
  for typ, p in pairs(parked) do
    -- The head first: the oldest ends up at the right, as in pending.
    redis.call('LPUSH', parkedTypes .. ':' .. typ, unpack(p))
    redis.call('SADD', parkedTypes, typ)
  end
  claim.writeDead(KEYS[7], KEYS[8])
  for _, l in ipairs(lanes) do
    if l.looked > 0 then
      redis.call('LTRIM', l.key, 0, -(l.looked + 1))
    end
  end
  if weighted and claim.got > 0 then
    local credits = {}
    for _, l in ipairs(lanes) do
      credits[#credits + 1] = l.name
      credits[#credits + 1] = l.credit
    end
    redis.call('HSET', tag .. ':swrr', unpack(credits))
  end
  for key, k in pairs(trims) do
    redis.call('LTRIM', key, 0, -(k + 1))
    if redis.call('LLEN', key) == 0 then
      redis.call('SREM', parkedTypes, string.sub(key, #parkedTypes + 2))
    end
  end
  return claim.reply()
end
