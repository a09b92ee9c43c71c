-- needs: readyat
-- Item: one item's state by id, read only.
-- KEYS[1]: values (hash)   KEYS[2]: leases (zset)   KEYS[3]: delayed (zset)
-- KEYS[4]: dead (zset)     KEYS[5]: attempts (hash) KEYS[6]: causes (hash)
-- KEYS[7]: ready (hash)    KEYS[8]: limits (hash)   KEYS[9]: results (hash)
-- ARGV[1]: the id   ARGV[2]: the most payload or result bytes to return
-- Returns {state, at ms, attempts, cause, own max attempts, payload size,
-- payload's first bytes}: state 0 unknown (never was, purged, or its
-- result expired), 1 pending, 2 leased, 3 delayed, 4 dead, 5 done (at:
-- when its result expires; the payload fields hold the result).
local id, cap = ARGV[1], tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local state, at = 0, -1
local s = redis.call('ZSCORE', KEYS[2], id)
if s then
  state, at = 2, tonumber(s)
else
  s = redis.call('ZSCORE', KEYS[3], id)
  if s then
    state, at = 3, tonumber(s)
  else
    s = redis.call('ZSCORE', KEYS[4], id)
    if s then
      state, at = 4, tonumber(s)
    elseif redis.call('HEXISTS', KEYS[1], id) == 1 then
      state, at = 1, readyAt(KEYS[7], id) or -1
    end
  end
end
if state == 0 then
  local stored = redis.call('HGET', KEYS[9], id)
  if stored then
    local expiry, result = string.match(stored, '^(%d+):[^:]*:(.*)$')
    if expiry and tonumber(expiry) > now then
      return {5, tonumber(expiry), 0, '', 0, #result, string.sub(result, 1, cap)}
    end
  end
  return {0, -1, 0, '', 0, 0, ''}
end
local v = redis.call('HGET', KEYS[1], id) or ''
return {state, at,
  tonumber(string.match(redis.call('HGET', KEYS[5], id) or '', '^%d+')) or 0,
  redis.call('HGET', KEYS[6], id) or '',
  tonumber(redis.call('HGET', KEYS[8], id)) or 0,
  #v, string.sub(v, 1, cap)}
