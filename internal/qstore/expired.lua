-- dropExpired drops the results that expired, the oldest first, at most
-- max of them: results is the results hash, expiring its list of "expiry
-- ms:id" in expiry order. An entry that does not parse goes with them.
-- A part (see doc.go) of the scripts that call it: Settle, Tidy, Claim.
local function dropExpired(results, expiring, now, max)
  local head = redis.call('LINDEX', expiring, 0)
  if not head or (tonumber(string.match(head, '^(%d+):')) or 0) > now then
    return
  end
  local entries = redis.call('LRANGE', expiring, 0, max - 1)
  local gone, n = {}, 0
  for _, e in ipairs(entries) do
    local at, id = string.match(e, '^(%d+):(.*)$')
    if at and tonumber(at) > now then
      break
    end
    n = n + 1
    gone[#gone + 1] = id
  end
  if #gone > 0 then
    redis.call('HDEL', results, unpack(gone))
  end
  redis.call('LTRIM', expiring, n, -1)
end

