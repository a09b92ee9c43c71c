-- The scripts that act on given items or else on a count of them (the
-- operators' by-id calls beside the queue's own) need this part. Their
-- ARGV[1] is the count, at most BatchMax; the ids follow it, if any.

-- listed returns the ids given after ARGV[1] that zset holds, each once,
-- in the order given; nil when no id was given.
local function listed(zset)
  if #ARGV < 2 then
    return nil
  end
  local ids = {unpack(ARGV, 2)}
  local scores = redis.call('ZMSCORE', zset, unpack(ids))
  local out, seen = {}, {}
  for i, id in ipairs(ids) do
    if scores[i] and not seen[id] then
      seen[id] = true
      out[#out + 1] = id
    end
  end
  return out
end
