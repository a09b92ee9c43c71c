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
-- HSET writes, HGET reads, and HDEL deletes with its key.

-- writeTraces stores ctx as the trace context of each of ids, due in
-- delay ms.
local function writeTraces(tag, ids, ctx, delay)
  local ttl = tonumber(delay) + traceKeep
  for _, id in ipairs(ids) do
    local key = traceKey(tag, id)
    redis.call('HSET', key, 'tp', ctx)
    redis.call('PEXPIRE', key, ttl)
  end
  local marker = tag .. ':traced'
  if redis.call('PTTL', marker) < ttl then
    redis.call('HSET', marker, 'tp', '1')
    redis.call('PEXPIRE', marker, ttl)
  end
end

-- dropTraces deletes the trace contexts of ids, if they have any.
local function dropTraces(tag, ids)
  for _, id in ipairs(ids) do
    redis.call('HDEL', traceKey(tag, id), 'tp')
  end
end

-- anyTraces says whether any item of the queue of tag may have a trace
-- context.
local function anyTraces(tag)
  return redis.call('EXISTS', tag .. ':traced') == 1
end

-- withTraces appends to a claim's reply of got items (claim.lua says its
-- form) the list of (index from 1, trace context) pairs of those that
-- have one, when any has.
local function withTraces(out, tag, got)
  local traced, nt = {}, 0
  for n = 1, got do
    local ctx = redis.call('HGET', traceKey(tag, out[4 + 3 * n]), 'tp')
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
