-- Priorities (see priorities.go): a part (see doc.go) of the scripts
-- that push items to pending. An item enqueued with a priority other than
-- "default" waits in its priority's own list, its lane, beside pending
-- (the default lane); claims draw from the lanes by their weights. Keys,
-- named after the queue's hash tag (pending's name, less ':pending'):
--   TAG:weights           hash priority → weight, as SetPriorities wrote it
--   TAG:lanes             hash id → priority, of items not in the default lane
--   TAG:pending:PRIORITY  list, a lane: as pending, the head at the right
--   TAG:swrr              hash priority → its credit in the claims' draw
-- A queue that never had a priority has no lanes hash, and its items go
-- to pending as they always did, for one EXISTS (or none: see laned).

-- laneOf is the list that an item of priority p waits in.
local function laneOf(pending, p)
  if not p or p == 'default' then
    return pending
  end
  return pending .. ':' .. p
end

-- pushLane pushes ids, all of priority p (nil or 'default': none), to
-- p's lane with cmd (LPUSH: to the tail; RPUSH: to the head) and returns
-- the reply of call: redis.call, or redis.pcall for a script that takes
-- its writes back when the push fails. It is the one push to a pending
-- list: every script that makes an item pending calls it, or pushPending,
-- which does (pushes_internal_test.go fails on any other push).
local function pushLane(call, cmd, pending, p, ids)
  return call(cmd, laneOf(pending, p), unpack(ids))
end

-- pushPending pushes ids to pending with cmd, each to its priority's lane
-- as the lanes hash has it, keeping their order within each lane. laned
-- says whether the lanes hash exists, when the caller knows (nil: one
-- EXISTS finds out).
local function pushPending(pending, cmd, ids, laned)
  if #ids == 0 then
    return
  end
  local lanes = string.sub(pending, 1, #pending - 8) .. ':lanes'
  if laned == nil then
    laned = redis.call('EXISTS', lanes) == 1
  end
  if not laned then
    pushLane(redis.call, cmd, pending, nil, ids)
    return
  end
  local of = redis.call('HMGET', lanes, unpack(ids))
  local groups, order = {}, {}
  for i, id in ipairs(ids) do
    local p = of[i] or 'default'
    local g = groups[p]
    if not g then
      g = {}
      groups[p] = g
      order[#order + 1] = p
    end
    g[#g + 1] = id
  end
  for _, p in ipairs(order) do
    pushLane(redis.call, cmd, pending, p, groups[p])
  end
end
