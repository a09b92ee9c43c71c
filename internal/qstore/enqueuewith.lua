-- needs: newitems, unique, traces
-- EnqueueWith: add one item with options: due later (in delayed rather
-- than pending), with an attempt limit of its own, under a unique key.
-- KEYS[1]: pending (list)   KEYS[2]: values (hash)   KEYS[3]: delayed (zset)
-- KEYS[4]: limits (hash)    KEYS[5]: dead (zset)
-- KEYS[6]: the unique key's lock (see unique.lua), with a unique key only
-- KEYS[#KEYS]: the chain's record (a hash: id, step, steps; see
-- Store.Chain), with a chain step only
-- ARGV[1]: the encoding pin (see encodingPin in store.go), the field "" of
-- values and limits
-- ARGV[2]: id   ARGV[3]: payload
-- ARGV[4]: delay in ms (0: pending at once)
-- ARGV[5]: max attempts (0: the queue's)
-- ARGV[6]: the unique key's lifetime in ms (with KEYS[6]; 0: no key)
-- ARGV[7]: the item's step in its chain ('': none)   ARGV[8]: the chain's
-- steps   ARGV[9]: how long the record outlives the item's due time, ms
-- ARGV[10]: the item's priority ('', 'default' or absent: none), which
-- must have a weight: it waits in its lane rather than in pending (see
-- lanes.lua)
-- ARGV[11]: the item's trace context ('' or absent: none; traces.lua)
-- ARGV[7] to ARGV[11] may be left out when they would be '' or 0.
-- Returns 1 when it added the item; 0 when that id already has a value
-- (a resent call: nothing is added twice); the holder's id when the
-- unique key is held by another live item (uniqueHolder), adding nothing.
-- A key of the wrong type fails the call with nothing written: values
-- is the first write, the unique key's lock is read before it, a chain's
-- record (whose old fields could not be brought back) is checked, and
-- the writes that may still fail take back the ones before them (see
-- undo.lua). A pending item's ready time is its id's (see readyat.lua).
local id = ARGV[2]
local delay = tonumber(ARGV[4])
local unique = tonumber(ARGV[6]) > 0 and KEYS[6]
local chain = (ARGV[7] or '') ~= '' and KEYS[#KEYS]
local priority = (ARGV[10] or '') ~= '' and ARGV[10] ~= 'default' and ARGV[10]
if chain and #KEYS ~= (unique and 7 or 6) then
  return redis.error_reply('ERR enqueue: a chain step without its record key')
end
local first
if unique then
  -- Before the holder is read: a resent call finds its own item there.
  if redis.call('HEXISTS', KEYS[2], id) == 1 then
    return 0
  end
  local holder
  holder, first = uniqueHolder(unique, KEYS[2], KEYS[5], id)
  if holder then
    return holder
  end
end
local lanes, unknown = lanesFor(priority) -- newitems.lua
if unknown then
  return unknown
end
if chain then
  redis.call('HEXISTS', chain, '')
end
-- HSET's count of new fields is 0 only when the id (and the pin) had
-- values already: a resent call, which adds nothing twice.
local valued = redis.call('HSET', KEYS[2], '', ARGV[1], id, ARGV[3])
if valued == 0 then
  return 0
end
placeNew({id}, valued, ARGV[1], ARGV[5], priority, lanes, delay)
if unique then
  takeUnique(unique, id, ARGV[6], first)
end
if chain then
  redis.call('HSET', chain, 'id', id, 'step', ARGV[7], 'steps', ARGV[8])
  redis.call('PEXPIRE', chain, delay + tonumber(ARGV[9]))
end
if (ARGV[11] or '') ~= '' then
  writeTraces(string.sub(KEYS[1], 1, #KEYS[1] - 8), {id}, ARGV[11], delay) -- ':pending'
end
return 1
