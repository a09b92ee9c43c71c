-- A unique key's lock (EnqueueOptions.Unique): a hash whose field "id" is
-- the item holding it, expiring with the key (HSET and PEXPIRE rather than
-- SET PX, so that the documented ACL grant covers it). A lock that settle
-- handed on to a follow-up names, in its field "first", the item that took
-- it (a chain's id): duplicates get that id. A part of the scripts that
-- call it (EnqueueWith, EnqueueJoin and Settle).

-- uniqueHolder returns the id a duplicate of id gets when the lock is held
-- by another live item (it has a value in values and is not in dead), else
-- nil and whether the lock names the item that took it (see takeUnique):
-- a lock whose holder was acked, purged or dead-lettered is free.
local function uniqueHolder(lock, values, dead, id)
  local lockFields = redis.call('HMGET', lock, 'id', 'first')
  local holder, first = lockFields[1], lockFields[2]
  if holder and holder ~= id and redis.call('HEXISTS', values, holder) == 1
      and not redis.call('ZSCORE', dead, holder) then
    return first or holder
  end
  return nil, first ~= false
end

-- takeUnique makes id the lock's holder for ttl ms. first says whether
-- the lock names an item that took it (uniqueHolder's second value),
-- which it forgets; nil: not known.
local function takeUnique(lock, id, ttl, first)
  if first ~= false then
    redis.call('HDEL', lock, 'first')
  end
  redis.call('HSET', lock, 'id', id)
  redis.call('PEXPIRE', lock, ttl)
end

-- handUnique hands the lock from the item from, if it holds it, on to its
-- follow-up to, with the lifetime it has left.
local function handUnique(lock, from, to)
  if redis.call('HGET', lock, 'id') ~= from then
    return
  end
  if redis.call('HEXISTS', lock, 'first') == 0 then
    redis.call('HSET', lock, 'id', to, 'first', from)
  else
    redis.call('HSET', lock, 'id', to)
  end
end
