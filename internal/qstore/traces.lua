-- Trace contexts of items (package tasks' spans; see tracectx.go): the
-- key TAG:trace:ID holds item ID's W3C traceparent, written by the
-- enqueue that made the item, returned by its claims, deleted with its
-- ack, cancel or purge, and expiring in any case (a previous release
-- that acks it does not know the key). TAG:traced exists while any
-- item of the queue may have one, so that a queue never traced looks
-- nothing up: it outlives every trace key written.

-- traceKeep is how long a trace context is kept past its item's due
-- time, ms: 7 days, longer than most tracing backends keep a trace, so
-- that a link to it still points somewhere.
local traceKeep = 7 * 24 * 3600 * 1000

-- traceKey is the key of the trace context of item id, in tag.
local function traceKey(tag, id)
  return tag .. ':trace:' .. id
end

-- The commands are those a worker's least-privilege ACL grants already
-- (docs/redis.md): each trace key is a hash of one field, "tp", which
-- HSET writes, HMGET reads, and HDEL deletes with its key; a join's
-- final item's has a second, "links", its children's runs' contexts.

-- markTraced makes the queue's marker (tag..':traced') live at least ttl
-- ms more.
local function markTraced(tag, ttl)
  local marker = tag .. ':traced'
  if redis.call('PTTL', marker) < ttl then
    redis.call('HSET', marker, 'tp', '1')
    redis.call('PEXPIRE', marker, ttl)
  end
end

-- writeTraces stores ctx as the trace context of each of ids, due in
-- delay ms.
local function writeTraces(tag, ids, ctx, delay)
  local ttl = tonumber(delay) + traceKeep
  for _, id in ipairs(ids) do
    local key = traceKey(tag, id)
    redis.call('HSET', key, 'tp', ctx)
    redis.call('PEXPIRE', key, ttl)
  end
  markTraced(tag, ttl)
end

-- dropTraces deletes the trace contexts of ids, if they have any.
local function dropTraces(tag, ids)
  for _, id in ipairs(ids) do
    redis.call('HDEL', traceKey(tag, id), 'tp', 'links')
  end
end

-- anyTraces says whether any item of the queue of tag may have a trace
-- context.
local function anyTraces(tag)
  return redis.call('EXISTS', tag .. ':traced') == 1
end

-- withTraces appends to a claim's reply of got items (claim.lua says its
-- form) the list of (index from 1, trace context) pairs of those that
-- have one, when any has. A join's final item's context is followed by
-- its children's runs' (childtrace.lua), space-separated, after a space
-- even when it has none of its own.
local function withTraces(out, tag, got)
  local traced, nt = {}, 0
  for n = 1, got do
    local kept = redis.call('HMGET', traceKey(tag, out[4 + 3 * n]), 'tp', 'links')
    local ctx = kept[1]
    if kept[2] then -- a join's final item: its children's runs follow
      ctx = (ctx or '') .. ' ' .. kept[2]
    end
    if ctx then
      traced[nt + 1] = n
      traced[nt + 2] = ctx
      nt = nt + 2
    end
  end
  if nt > 0 then
    out[#out + 1] = traced
  end
  return out
end
