-- needs: undo, lanes
-- What the enqueue scripts (enqueue.lua, enqueuewith.lua) share: where a
-- new item goes. Both take KEYS[1]: pending (list), KEYS[2]: values
-- (hash), KEYS[3]: delayed (zset), KEYS[4]: limits (hash).

-- lanesFor returns the lanes hash, for items of priority p (false: none),
-- or nil and an error reply when p has no weight (see lanes.lua).
local function lanesFor(p)
  if not p then
    return nil
  end
  local tag = string.sub(KEYS[1], 1, #KEYS[1] - 8) -- ':pending'
  if redis.call('HEXISTS', tag .. ':weights', p) == 0 then
    return nil, redis.error_reply('ERR enqueue: unknown priority "' .. p .. '"')
  end
  return tag .. ':lanes'
end

-- takeBack takes back the writes of placeNew before the one that failed
-- with err (see undo.lua), and raises err.
local function takeBack(err, ids, valued, limited, lanes)
  if lanes then
    redis.call('HDEL', lanes, unpack(ids))
  end
  if limited then
    dropFields(KEYS[4], ids, limited)
  end
  dropFields(KEYS[2], ids, valued)
  error(err)
end

-- placeNew puts new items, ids, whose values an HSET has just written
-- (valued: its reply), in their places: their attempt limit (limit, as
-- text: '0' for the queue's), their priority p (false: none; lanes, its
-- lanesFor), and pending, or delayed for delay ms when delay > 0. When a
-- write fails (a key of the wrong type), it takes back the ones before
-- it, the values too, and raises that write's error.
local function placeNew(ids, valued, pin, limit, p, lanes, delay)
  local limited, laned
  if tonumber(limit) > 0 then
    local limits = {'', pin}
    for _, id in ipairs(ids) do
      limits[#limits + 1] = id
      limits[#limits + 1] = limit
    end
    local r = redis.pcall('HSET', KEYS[4], unpack(limits))
    if failed(r) then
      takeBack(r, ids, valued, limited, laned)
    end
    limited = r
  end
  if p then
    local of = {}
    for _, id in ipairs(ids) do
      of[#of + 1] = id
      of[#of + 1] = p
    end
    local r = redis.pcall('HSET', lanes, unpack(of))
    if failed(r) then
      takeBack(r, ids, valued, limited, laned)
    end
    laned = lanes
  end
  if delay > 0 then
    -- TIME rounded up, so no item is due before the delay is over.
    local t = redis.call('TIME')
    local due = t[1] * 1000 + math.ceil(t[2] / 1000) + delay
    local scored = {}
    for _, id in ipairs(ids) do
      scored[#scored + 1] = due
      scored[#scored + 1] = id
    end
    local r = redis.pcall('ZADD', KEYS[3], unpack(scored))
    if failed(r) then
      takeBack(r, ids, valued, limited, laned)
    end
  else
    local r = pushLane(redis.pcall, 'LPUSH', KEYS[1], p, ids) -- lanes.lua
    if failed(r) then
      takeBack(r, ids, valued, limited, laned)
    end
  end
end
