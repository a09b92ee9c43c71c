-- needs: lanes
-- EnqueueOne: enqueuewith.lua's call for the usual item, with no chain
-- or trace context of its own: at once or delayed, with an attempt limit,
-- a priority, a unique key or none. The same arguments and replies as
-- enqueuewith.lua (and keys, but the last two when the item has neither
-- a limit nor a unique key), which it leaves chains and trace contexts
-- to, in fewer of Redis's µs: a script's parts' functions are made anew
-- on every call (see newScriptOfCalls), and this one makes only the few
-- it calls.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: delayed (zset)
-- KEYS[4]: limits (hash)    KEYS[5]: dead (zset)
-- KEYS[6]: the unique key's lock (see unique.lua), with a unique key only
-- ARGV[1]: the encoding pin (see encodingPin in store.go), the field "" of
-- values and limits   ARGV[2]: id   ARGV[3]: payload
-- ARGV[4]: delay in ms ('0': pending at once)
-- ARGV[5]: max attempts ('0': the queue's)
-- (compared as text, '0' as Go writes 0: tonumber costs a tenth of a µs)
-- ARGV[6]: the unique key's lifetime in ms (with KEYS[6]; 0: no key)
-- ARGV[7] to ARGV[9]: unused (a chain's, in enqueuewith.lua)
-- ARGV[10]: the item's priority ('', 'default' or absent: none), which
-- must have a weight: it waits in its lane rather than in pending (see
-- lanes.lua)
-- Returns 1 when it added the item; 0 when that id already has a value
-- (a resent call); the holder's id when the unique key is held by
-- another live item, adding nothing. A key of the wrong type fails the
-- call with nothing written (undo.lua). A pending item's ready time is
-- its id's (see readyat.lua).
local id = ARGV[2]
local unique = KEYS[6]
local first
if unique then
  -- The lock first: a free one (the usual case) spares the lookup of id,
  -- which only a resent call, whose lock another item took since, needs.
  -- The lock's reading and taking are unique.lua's (uniqueHolder and
  -- takeUnique), inlined: its functions would be closures made on every
  -- call.
  local lock = redis.call('HMGET', unique, 'id', 'first')
  local holder = lock[1]
  first = lock[2]
  if holder and holder ~= id then
    if redis.call('HEXISTS', KEYS[2], id) == 1 then
      return 0
    end
    if redis.call('HEXISTS', KEYS[2], holder) == 1 and not redis.call('ZSCORE', KEYS[5], holder) then
      return first or holder
    end
  end
end
local p = ARGV[10]
if p == '' or p == 'default' then
  p = nil
end
local lanes
if p then
  local tag = string.sub(KEYS[1], 1, #KEYS[1] - 8) -- ':pending'
  if redis.call('HEXISTS', tag .. ':weights', p) == 0 then
    return redis.error_reply('ERR enqueue: unknown priority "' .. p .. '"')
  end
  lanes = tag .. ':lanes'
end
-- HSET's count of new fields is 0 only when the id (and the pin) had
-- values already: a resent call, which adds nothing twice.
local valued = redis.call('HSET', KEYS[2], '', ARGV[1], id, ARGV[3])
if valued == 0 then
  return 0
end
-- The writes that may meet a key of the wrong type, each while none has
-- failed, then those before a failed one taken back, as undo.lua does
-- but without its functions: each would be a closure made on every
-- call. Their replies are numbers; a failed redis.pcall's is a table.
local failed, limited, laned
if ARGV[5] ~= '0' then
  limited = redis.pcall('HSET', KEYS[4], '', ARGV[1], id, ARGV[5])
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
  if ARGV[4] ~= '0' then
    -- TIME rounded up, so no item is due before the delay is over. As
    -- text made by '%d': a number that Redis turns into text costs more.
    local t = redis.call('TIME')
    local due = string.format('%d', t[1] * 1000 + math.ceil(t[2] / 1000) + ARGV[4])
    r = redis.pcall('ZADD', KEYS[3], due, id)
  else
    r = pushLane(redis.pcall, 'LPUSH', KEYS[1], p, {id}) -- lanes.lua
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
    redis.call('HDEL', KEYS[4], id, limited > 1 and '' or id)
  end
  redis.call('HDEL', KEYS[2], id, valued > 1 and '' or id)
  error(failed)
end
if unique then
  if first then
    redis.call('HDEL', unique, 'first')
  end
  redis.call('HSET', unique, 'id', id)
  redis.call('PEXPIRE', unique, ARGV[6])
end
return 1
