-- List: a page of one state's items, oldest first, read only.
-- KEYS[1]: pending (list)   KEYS[2]: leases (zset)   KEYS[3]: delayed (zset)
-- KEYS[4]: dead (zset)      KEYS[5]: values (hash)   KEYS[6]: attempts (hash)
-- KEYS[7]: causes (hash)    KEYS[8]: ready (hash)    KEYS[9]: limits (hash)
-- KEYS[10]: the priorities' weights (hash)   KEYS[11]: the parked types (set)
-- ARGV[1]: the state, 'pending', 'leased', 'delayed' or 'dead'
-- ARGV[2]: offset   ARGV[3]: count, at most BatchMax
-- ARGV[4]: the most payload bytes to return per item
-- ARGV[5]: the encoding pin (see encodingPin in store.go)
-- Returns {total, then per item: id, at ms (pending: when it became
-- pending; leased: its deadline; delayed: when due; dead: when it died; -1
-- if unknown), attempts, cause, own max attempts (0: none), payload size,
-- payload's first bytes}.
local state, offset, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local ids, at, total = {}, {}, 0
if state == 'pending' then
  -- Every list of pending items, paged as one: the default lane, the
  -- priorities' lanes (lanes.lua) by name, then the items a type's limit
  -- set aside (types.lua) by type. Enqueued at the left, claimed from
  -- the right: the oldest of each is last.
  local lists = {KEYS[1]}
  local lanes = redis.call('HKEYS', KEYS[10])
  table.sort(lanes)
  for _, p in ipairs(lanes) do
    if p ~= 'default' then
      lists[#lists + 1] = KEYS[1] .. ':' .. p
    end
  end
  local types = redis.call('SMEMBERS', KEYS[11])
  table.sort(types)
  for _, typ in ipairs(types) do
    lists[#lists + 1] = KEYS[11] .. ':' .. typ
  end
  local skip, want = offset, count
  for _, list in ipairs(lists) do
    local n = redis.call('LLEN', list)
    total = total + n
    if skip >= n then
      skip = skip - n
    elseif want > 0 then
      local page = redis.call('LRANGE', list, -(skip + want), -(skip + 1))
      for i = #page, 1, -1 do
        ids[#ids + 1] = page[i]
      end
      want, skip = want - #page, 0
    end
  end
  for i, id in ipairs(ids) do
    at[i] = readyAt(KEYS[8], id) or -1
  end
else
  local key = KEYS[2]
  if state == 'delayed' then
    key = KEYS[3]
  elseif state == 'dead' then
    key = KEYS[4]
  end
  total = redis.call('ZCARD', key)
  local page = redis.call('ZRANGE', key, offset, offset + count - 1, 'WITHSCORES')
  for i = 1, #page, 2 do
    if page[i] ~= ARGV[5] then
      ids[#ids + 1] = page[i]
      at[#at + 1] = tonumber(page[i + 1])
    end
  end
  if state == 'leased' and redis.call('ZSCORE', key, ARGV[5]) then
    total = total - 1
  end
end
local out = {total}
for i, id in ipairs(ids) do
  local v = redis.call('HGET', KEYS[5], id) or ''
  out[#out + 1] = id
  out[#out + 1] = at[i]
  out[#out + 1] = tonumber(string.match(redis.call('HGET', KEYS[6], id) or '', '^%d+')) or 0
  out[#out + 1] = redis.call('HGET', KEYS[7], id) or ''
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[9], id)) or 0
  out[#out + 1] = #v
  out[#out + 1] = string.sub(v, 1, cap)
end
return out
