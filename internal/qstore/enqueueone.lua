-- needs: lanes
-- EnqueueOne: enqueuewith.lua's work for the usual item, with no chain
-- or trace context of its own: at once or delayed, with an attempt limit,
-- a priority, a unique key or none, in fewer of Redis's µs. It makes
-- only the functions it calls (see newScriptOfCalls), and is sent only
-- what its item needs: each key or argument costs Redis its parsing, an
-- object and a Lua string.
-- KEYS[1]: values (hash)
-- KEYS[2]: where the item waits: pending (list), or delayed (zset) when
-- it has a delay
-- KEYS[3]: the unique key's lock (see unique.lua), with a unique key only
-- The queue's limits (hash), dead (zset) and priorities' keys, used with
-- an attempt limit, by a resent call whose lock another item took and
-- with a priority, are named after the hash tag of values.
-- ARGV[1]: id   ARGV[2]: payload
-- ARGV[3]: delay in ms (absent or '0': pending at once)
-- ARGV[4]: the unique key's lifetime in ms (with KEYS[3])
-- ARGV[5]: max attempts (absent or '0': the queue's)
-- ARGV[6]: the item's priority (absent, '' or 'default': none), which
-- must have a weight: it waits in its lane rather than in pending (see
-- lanes.lua)
-- The last arguments are left out when they would be '0' or ''; those
-- before one that is sent are '0' or ''. Numbers are compared as text,
-- '0' as Go writes 0: tonumber costs a tenth of a µs.
-- Returns 1 when it added the item; 0 when that id already has a value
-- (a resent call); the holder's id when the unique key is held by
-- another live item, adding nothing. A key of the wrong type fails the
-- call with nothing written (undo.lua). A pending item's ready time is
-- its id's (see readyat.lua).
-- The encoding pin (encodingPin in store.go: a test holds them equal),
-- the field "" of values and limits, written rather than sent.
local pin = "worksteal: this entry keeps the key in Redis's hashtable encoding (see package queue)"
local id = ARGV[1]
local unique = KEYS[3]
local holder
if unique then
  -- The lock first: a free one (the usual case) spares the lookup of id,
  -- which only a resent call, whose lock another item took since, needs.
  -- The lock's reading and taking are unique.lua's (uniqueHolder and
  -- takeUnique), inlined: its functions would be closures made on every
  -- call. Its field "first" is read only when another item holds it.
  holder = redis.call('HGET', unique, 'id')
  if holder and holder ~= id then
    if redis.call('HEXISTS', KEYS[1], id) == 1 then
      return 0
    end
    local dead = string.sub(KEYS[1], 1, #KEYS[1] - 7) .. ':dead' -- ':values'
    if redis.call('HEXISTS', KEYS[1], holder) == 1 and not redis.call('ZSCORE', dead, holder) then
      return redis.call('HGET', unique, 'first') or holder
    end
  end
end
local p = ARGV[6]
if p == '' or p == 'default' then
  p = nil
end
local lanes
if p then
  local tag = string.sub(KEYS[1], 1, #KEYS[1] - 7) -- ':values'
  if redis.call('HEXISTS', tag .. ':weights', p) == 0 then
    return redis.error_reply('ERR enqueue: unknown priority "' .. p .. '"')
  end
  lanes = tag .. ':lanes'
end
-- HSET's count of new fields is 0 only when the id (and the pin) had
-- values already: a resent call, which adds nothing twice.
local valued = redis.call('HSET', KEYS[1], '', pin, id, ARGV[2])
if valued == 0 then
  return 0
end
-- The writes that may meet a key of the wrong type, each while none has
-- failed, then those before a failed one taken back, as undo.lua does
-- but without its functions: each would be a closure made on every
-- call. Their replies are numbers; a failed redis.pcall's is a table.
local failed, limits, limited, laned
local limit = ARGV[5]
if limit and limit ~= '0' then
  limits = string.sub(KEYS[1], 1, #KEYS[1] - 7) .. ':limits' -- ':values'
  limited = redis.pcall('HSET', limits, '', pin, id, limit)
  if type(limited) == 'table' then
    failed, limited = limited, nil
  end
end
if lanes and not failed then
  local r = redis.pcall('HSET', lanes, id, p)
  if type(r) == 'table' then
    failed = r
  else
    laned = true
  end
end
if not failed then
  local r
  local delay = ARGV[3]
  if delay and delay ~= '0' then
    -- TIME rounded up, so no item is due before the delay is over. As
    -- text made by '%d': a number that Redis turns into text costs more.
    local t = redis.call('TIME')
    local due = string.format('%d', t[1] * 1000 + math.ceil(t[2] / 1000) + delay)
    r = redis.pcall('ZADD', KEYS[2], due, id)
  else
    -- lanes.lua's one call: a delayed item's script leaves the part out.
    r = pushLane(redis.pcall, 'LPUSH', KEYS[2], p, {id})
  end
  if type(r) == 'table' then
    failed = r
  end
end
if failed then
  if laned then
    redis.call('HDEL', lanes, id)
  end
  -- The pin too when this call added it (a count of 2); else id twice,
  -- which HDEL takes.
  if limited then
    redis.call('HDEL', limits, id, limited > 1 and '' or id)
  end
  redis.call('HDEL', KEYS[1], id, valued > 1 and '' or id)
  error(failed)
end
if unique then
  if holder then
    redis.call('HDEL', unique, 'first') -- of a lock taken over, if any
  end
  redis.call('HSET', unique, 'id', id)
  redis.call('PEXPIRE', unique, ARGV[4])
end
return 1
