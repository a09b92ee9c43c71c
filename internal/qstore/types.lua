-- Task types' limits (see limits.go): what Claim, Settle, Release, Extend
-- and the maintenance share, a part of their scripts. A queue's
-- per-type keys carry a task type in their names, which only a script
-- reads (from a payload, or from holding), so scripts name them after the
-- queue's hash tag, which its leases key begins with: every one of them
-- is in the queue's slot.
--   TAG:typelimits        hash type → "running rate per-ms"
--   TAG:holding           hash id → type, for leased items of limited types
--   TAG:running:TYPE      zset id → lease deadline (ms), the type's leases
--   TAG:starts:TYPE       zset "id:token" → claim time (ms), the last per-ms
--   TAG:parked            set of the types with items set aside
--   TAG:parked:TYPE       list of ids set aside, the oldest at the right

-- tagOf is the hash tag (and prefix) of a queue, from its leases key.
local function tagOf(leases)
  return string.sub(leases, 1, #leases - 7) -- ':leases'
end

-- typeOf reads the task type at the start of a payload as package tasks
-- encodes it: a version byte (1 or 2), the type's length as a uvarint (1
-- to 128) and the type. Any other payload has no type: a plain item,
-- never limited.
local function typeOf(v)
  local version, len = string.byte(v, 1, 2)
  if (version ~= 1 and version ~= 2) or not len or len == 0 then
    return nil
  end
  local at = 3
  if len >= 128 then -- 128, the longest name, takes two bytes: 0x80 0x01
    if len ~= 128 or string.byte(v, 3) ~= 1 then
      return nil
    end
    at = 4
  end
  if #v < at + len - 1 then
    return nil
  end
  return string.sub(v, at, at + len - 1)
end

-- letGo frees the places that the items ids, no longer leased, held in
-- their types' limits: their running entries and their holding field.
-- With tokens (a Release: the items never ran), their starts go too.
-- A queue without limited types has no holding hash: held says whether
-- it exists, when the caller knows (nil: one EXISTS finds out).
local function letGo(tag, ids, tokens, held)
  local holding = tag .. ':holding'
  if held == nil then
    held = #ids > 0 and redis.call('EXISTS', holding) == 1
  end
  if not held or #ids == 0 then
    return
  end
  local types = redis.call('HMGET', holding, unpack(ids))
  local running, starts, gone = {}, {}, {}
  for i, id in ipairs(ids) do
    local typ = types[i]
    if typ then
      gone[#gone + 1] = id
      local r = running[typ]
      if not r then
        r, starts[typ] = {}, {}
        running[typ] = r
      end
      r[#r + 1] = id
      if tokens then
        local s = starts[typ]
        s[#s + 1] = id .. ':' .. tokens[i]
      end
    end
  end
  for typ, r in pairs(running) do
    redis.call('ZREM', tag .. ':running:' .. typ, unpack(r))
    if #starts[typ] > 0 then
      redis.call('ZREM', tag .. ':starts:' .. typ, unpack(starts[typ]))
    end
  end
  if #gone > 0 then
    redis.call('HDEL', holding, unpack(gone))
  end
end
