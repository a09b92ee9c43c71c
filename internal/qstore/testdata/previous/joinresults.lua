-- JoinResults: the results of a join's children, read only.
-- KEYS[1]: the join's record (hash: left, total)   KEYS[2]: results (hash)
-- ARGV[1]: the join's id
-- Returns nil without a record, else one entry per child, in order: its
-- result, or false if it has none (not acked yet, or expired).
local total = tonumber(redis.call('HGET', KEYS[1], 'total'))
if not total then
  return nil
end
local ids = {}
for i = 1, total do
  ids[i] = ARGV[1] .. '.' .. i
end
local stored = redis.call('HMGET', KEYS[2], unpack(ids))
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local out = {}
for i = 1, total do
  out[i] = false
  -- "expiry ms:token:result"; the token has no ':'.
  local at, rest = string.match(stored[i] or '', '^(%d+):(.*)$')
  if at and tonumber(at) > now then
    local sep = string.find(rest, ':', 1, true) or 0
    out[i] = string.sub(rest, sep + 1)
  end
end
return out
