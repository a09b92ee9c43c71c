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

-- writeTraces stores ctx as the trace context of each of ids, due in
-- delay ms.
local function writeTraces(tag, ids, ctx, delay)
  local ttl = tonumber(delay) + traceKeep
  for _, id in ipairs(ids) do
    redis.call('SET', traceKey(tag, id), ctx, 'PX', ttl)
  end
  local marker = tag .. ':traced'
  if redis.call('PTTL', marker) < ttl then
    redis.call('SET', marker, '1', 'PX', ttl)
  end
end

-- dropTraces deletes the trace contexts of ids, if they have any.
local function dropTraces(tag, ids)
  if #ids == 0 then
    return
  end
  local keys = {}
  for i, id in ipairs(ids) do
    keys[i] = traceKey(tag, id)
  end
  redis.call('DEL', unpack(keys))
end

-- withTraces appends to a claim's reply (claim.lua says its form) the
-- list of (index from 1, trace context) pairs of its items that have
-- one, when any has.
local function withTraces(out, tag)
  local keys, n = {}, 0
  for i = 7, #out, 3 do
    n = n + 1
    keys[n] = traceKey(tag, out[i])
  end
  if n == 0 then
    return out
  end
  local found = redis.call('MGET', unpack(keys))
  local traced, nt = {}, 0
  for i = 1, n do
    if found[i] then
      traced[nt + 1] = i
      traced[nt + 2] = found[i]
      nt = nt + 2
    end
  end
  if nt > 0 then
    out[#out + 1] = traced
  end
  return out
end
