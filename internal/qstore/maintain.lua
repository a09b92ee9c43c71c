-- needs: types, lanes
-- The maintenance steps that bring items back to pending, a part of the
-- scripts that run them (Promote, Tidy, and Claim, which runs both
-- before it claims). Each handles at most max items, takes the time
-- as its script read it from TIME (ms rounded down, and as text, made
-- once: Lua turns a number into a string slowly) and returns how many it
-- handled. Each adds an item to its new place before it takes it from the
-- old one, so a failed script (a key of the wrong type) cannot lose it.
-- Items with a priority go to its lane rather than to pending (see
-- lanes.lua).

-- reportDead adds to report a dead letter that a script made on its own:
-- its id, value ('' without one), attempt, limit of attempts (0 when
-- unknown) and cause. A claim's or Tidy's reply carries the list, headed
-- "dead", to the Go code (qstore.ScriptDead), which logs each.
local function reportDead(report, id, value, attempt, limit, cause)
  local n = #report
  report[n + 1] = id
  report[n + 2] = value or ''
  report[n + 3] = attempt
  report[n + 4] = limit
  report[n + 5] = cause
end

-- promoteDue moves the delayed items that are due (score <= now), the
-- earliest due first, or, given ids, those delayed items as if they were
-- due, to the tail of pending, marking them ready now.
local function promoteDue(delayed, pending, ready, nowText, max, ids)
  ids = ids or redis.call('ZRANGEBYSCORE', delayed, '-inf', nowText, 'LIMIT', 0, max)
  if #ids == 0 then
    return 0
  end
  local marks = {}
  for i, id in ipairs(ids) do
    marks[2 * i - 1] = id
    marks[2 * i] = nowText
  end
  pushPending(pending, 'LPUSH', ids) -- each to its lane (lanes.lua)
  redis.call('HSET', ready, unpack(marks))
  redis.call('ZREM', delayed, unpack(ids))
  return #ids
end

-- handBackExpired hands back the leases that expired, the longest expired
-- first. A lease has expired once TIME reaches its deadline: deadlines are
-- whole ms (Claim rounds TIME up), so deadline <= TIME rounded down says
-- just that, never earlier. An item at its last attempt (its own limit in
-- limits, else maxAttempts) is dead-lettered with a cause; the others go
-- to the tail of pending, marked ready now. Each keeps its count of
-- attempts; its token goes. k holds the keys: leases, attempts, pending,
-- dead, causes, ready, limits, values; and report, a list to which each
-- dead letter adds its id, value, attempt, limit and cause (see
-- reportDead), so that the caller's process can log it. Their places in
-- their task types' limits are freed (letGo in types.lua).
local function handBackExpired(k, nowText, max, maxAttempts)
  local ids = redis.call('ZRANGEBYSCORE', k.leases, '-inf', nowText, 'LIMIT', 0, max)
  if #ids == 0 then
    return 0
  end
  -- A leased item's attempts field is "attempt-claim"; only the count stays.
  local fields = redis.call('HMGET', k.attempts, unpack(ids))
  local limits = {}
  -- One EXISTS for three keys: it counts a key named k times k times.
  local tag = tagOf(k.leases)
  local lanes = string.sub(k.pending, 1, #k.pending - 8) .. ':lanes'
  local flags = redis.call('EXISTS', k.limits, tag .. ':holding', tag .. ':holding', lanes, lanes, lanes, lanes)
  if flags % 2 == 1 then
    limits = redis.call('HMGET', k.limits, unpack(ids))
  end
  local back, ready, dead, deadIds, causes, counts, deadAt = {}, {}, {}, {}, {}, {}, {}
  for i, id in ipairs(ids) do
    local count = string.match(fields[i] or '', '^%d+')
    local attempt = tonumber(count) or 0
    local limit = tonumber(limits[i]) or maxAttempts
    if count then
      counts[#counts + 1] = id
      counts[#counts + 1] = count
    end
    if attempt >= limit then
      dead[#dead + 1] = nowText
      dead[#dead + 1] = id
      deadIds[#deadIds + 1] = id
      deadAt[#deadAt + 1] = {attempt, limit}
      causes[#causes + 1] = id
      causes[#causes + 1] = 'lease expired at attempt ' .. attempt .. ' of ' .. limit
    else
      back[#back + 1] = id
      ready[#ready + 1] = id
      ready[#ready + 1] = nowText
    end
  end
  if #back > 0 then
    pushPending(k.pending, 'LPUSH', back, flags >= 4) -- each to its lane (lanes.lua)
    redis.call('HSET', k.ready, unpack(ready))
  end
  if #deadIds > 0 then
    redis.call('ZADD', k.dead, unpack(dead))
    redis.call('HSET', k.causes, unpack(causes))
    redis.call('HDEL', k.ready, unpack(deadIds))
    local values = redis.call('HMGET', k.values, unpack(deadIds))
    for i, id in ipairs(deadIds) do
      reportDead(k.report, id, values[i], deadAt[i][1], deadAt[i][2], causes[2 * i])
    end
  end
  redis.call('ZREM', k.leases, unpack(ids))
  letGo(tag, ids, nil, flags % 4 >= 2)
  if #counts > 0 then
    redis.call('HSET', k.attempts, unpack(counts))
  end
  return #ids
end
