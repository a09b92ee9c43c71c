-- readyAt: when an item last became pending (ms), for the scripts that
-- read it (a part of theirs). An enqueue writes no ready time: an
-- id starts with the ms of its making (see newID in store.go), so a fresh
-- item's is its id's. The ready hash holds the time of an item that
-- became pending later (promoted, requeued, a follow-up), which wins.

-- idTime is the ms in id's first 10 characters (base32, 50 bits: the 48
-- of the time and 2 random ones), or nil for an id not of that form.
local function idTime(id)
  if #id ~= 26 then
    return nil
  end
  local v = 0
  for i = 1, 10 do
    local c = string.byte(id, i)
    if c >= 97 and c <= 122 then
      v = v * 32 + c - 97
    elseif c >= 50 and c <= 55 then
      v = v * 32 + c - 24
    else
      return nil
    end
  end
  return math.floor(v / 4)
end

local function readyAt(ready, id)
  return tonumber(redis.call('HGET', ready, id)) or idTime(id)
end
