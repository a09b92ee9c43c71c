-- Acquire: take the job's lock for a slice, or say why not and for how long.
--
-- The lock is a hash. token, held: the running slice's token and the Redis
-- time (ms) until which it holds the lock. rest: until when the job rests
-- after a slice (a fixed rate with Every). paused: until when an operator
-- paused the job. s1 … s(n-1): seats beside the running slice, each
-- 'token:held'. Automatic pace adds slot (the last slot whose run was
-- taken) and streak (slices in a row that reported a backlog); a schedule
-- adds tick (the latest tick taken, or skipped while paused). Both count
-- their visits: vslot (the slot or tick counted), visits (its weighted
-- visits), fleet (the sums, smoothed: an estimate of the processes that
-- visit) and folds (the slots folded into it); and both keep the carrier:
-- carrier (the start of the oldest process that visits, 20 digits that
-- compare as strings) and carried (Redis ms of its last visit). The
-- carrier visits every slot or tick, so that a run does not hang on
-- random visits; a visit of an older process, or any once the carrier has
-- been silent, makes its process the carrier. The watcher (watcher,
-- watched) is the youngest other process that visits: it visits every
-- eighth slot or tick, so that a carrier gone silent is replaced soon
-- however many processes went with it; a visit of a younger process, or
-- any other once the watcher has been silent, makes its process the
-- watcher.
--
-- KEYS[1]: the lock. ARGV, for every mode: token, ttl (ms), slices (how
-- many may run at once), woken ('1': an enqueue asked for this visit; it
-- takes the lock while the job rests, not while a slice runs or it is
-- paused), born (this visit's process start; '' for none), silence (ms
-- after which the carrier is taken for gone), watch (the same for the
-- watcher), mode; then the mode's own:
--   'pace' (automatic): every (ms), phase (ms), keep (ms the state outlives
--          the visit), weight (the mean slots between its process's visits)
--   'tick' (a schedule): tick (unix ms, the tick it would run), keep,
--          weight (1 over the visit's chance; 0 for the carrier's)
--   'rate' (a fixed rate): nothing more
--
-- Returns name, value pairs: state (1 taken, 2 a slice runs, 3 resting (a
-- schedule: its tick taken, or not yet come), 4 paused), wait (ms until
-- that changes; -1: an older version's lock without expiry), now (Redis's
-- clock, ms), seat (the seat taken; '' for the lock itself), carry (1 if
-- this visit's process carries the job), watch (1 if it watches the
-- carrier); 'pace' adds left (ms until the
-- slot ends), fleet (the estimate, '' while none), streak and folds;
-- 'tick' adds tick (the latest taken, 0 if none) and fleet.
local key = KEYS[1]
local token, ttl, slices = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]) or 1
local woken, born, silence, watch, mode = ARGV[4] == '1', ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local f = redis.pcall('HMGET', key, 'token', 'held', 'rest', 'paused', 'slot', 'streak', 'vslot', 'visits', 'fleet', 'folds', 'tick', 'carrier', 'carried', 'watcher', 'watched')
if f.err then
  -- The string lock of earlier versions, met during a rolling upgrade:
  -- respect it as it says.
  local state = 2
  if redis.call('GET', key) == 'cooldown' then
    state = 3
  end
  return {'state', state, 'wait', redis.call('PTTL', key), 'now', now, 'seat', '', 'carry', 0, 'watch', 0}
end

local running = f[1] and (tonumber(f[2]) or 0) > now
local held = running and tonumber(f[2]) or 0
local rest = tonumber(f[3]) or 0
local paused = tonumber(f[4]) or 0
local streak = tonumber(f[6]) or 0
local state, wait, keep = 1, 0, 0
local reply = {}

-- Counts a visit of weight in period p (a slot, or a tick's ms) and
-- returns the estimate: a finished period folds into the smoothed sum
-- at the rate given, and each of the gap periods after it that had no
-- visit at all folds as a zero.
local function count(p, weight, rate, gap)
  local vslot, visits, fleet = tonumber(f[7]), tonumber(f[8]) or 0, tonumber(f[9])
  local folds = tonumber(f[10]) or 0
  if vslot ~= p then
    if vslot and vslot < p then
      if fleet then fleet = fleet + rate * (visits - fleet) else fleet = visits end
      fleet = fleet * (1 - rate) ^ math.min(gap(vslot), 64)
      folds = math.min(folds + 1, 99)
      redis.call('HSET', key, 'fleet', fleet, 'folds', folds)
    end
    visits = 0
  end
  visits = visits + weight
  redis.call('HSET', key, 'vslot', p, 'visits', visits)
  -- Until a period has been folded, the count so far.
  return tostring(fleet or visits), folds
end

local slot, tick
if mode == 'pace' then
  local every, phase, weight = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[12])
  keep = tonumber(ARGV[11])
  slot = math.floor((now - phase) / every)
  local left = (slot + 1) * every + phase - now
  local estimate, folds = count(slot, weight, 0.125, function(vslot) return slot - vslot - 1 end)
  if paused > now then
    state, wait = 4, paused - now
  elseif running and slices > 1 and (woken or streak > 0) then
    state, wait = 2, held - now -- a seat beside it may be free
  elseif tonumber(f[5]) == slot and not woken then
    state, wait = 3, left
  elseif running then
    state, wait = 2, held - now
  end
  reply = {'left', left, 'fleet', estimate, 'streak', streak, 'folds', folds}
elseif mode == 'tick' then
  tick = tonumber(ARGV[9])
  keep = tonumber(ARGV[10])
  local last = tonumber(f[11]) or 0
  -- Ticks may be unevenly spaced: a tick without a visit is not folded.
  local estimate = count(tick, tonumber(ARGV[11]), 0.25, function() return 0 end)
  if tick > now then
    state, wait = 3, tick - now
  elseif tick <= last then
    state = 3
  elseif paused > now then
    -- A tick while paused is skipped, not queued for the resume.
    state, wait = 4, paused - now
    redis.call('HSET', key, 'tick', tick)
    last = tick
  elseif running then
    state, wait = 2, held - now
  end
  if state == 1 then
    last = tick
  end
  reply = {'tick', last, 'fleet', estimate}
else
  if paused > now then
    state, wait = 4, paused - now
  elseif running then
    state, wait = 2, held - now
  elseif rest > now and not woken then
    state, wait = 3, rest - now
  end
end

-- The carrier and its watcher: each kept while it visits, taken over by
-- an older process (a younger, for the watcher) or once it has been
-- silent. The watcher that takes the carrier's place leaves its own.
local carry, watching = 0, 0
if (mode == 'pace' or mode == 'tick') and born and born ~= '' then
  local carrier, carried = f[12], tonumber(f[13]) or 0
  local watcher, watched = f[14], tonumber(f[15]) or 0
  if not carrier or born <= carrier or now - carried > silence then
    redis.call('HSET', key, 'carrier', born, 'carried', now)
    carry = 1
    if watcher == born then
      redis.call('HDEL', key, 'watcher', 'watched')
    end
  elseif not watcher or born >= watcher or now - watched > watch then
    redis.call('HSET', key, 'watcher', born, 'watched', now)
    watching = 1
  end
end

local seat = ''
if state == 2 and slices > 1 and (mode == 'rate' or woken or streak > 0) then
  -- A seat beside the running slice.
  for i = 1, slices - 1 do
    local s = 's' .. i
    local v = redis.call('HGET', key, s)
    local ends = v and tonumber(string.match(v, ':(%d+)$')) or 0
    if ends <= now then
      redis.call('HSET', key, s, token .. ':' .. (now + ttl))
      if redis.call('PTTL', key) < ttl then
        redis.call('PEXPIRE', key, ttl)
      end
      state, wait, seat = 1, 0, s
      break
    end
  end
elseif state == 1 then
  held = now + ttl
  redis.call('HSET', key, 'token', token, 'held', held)
  if slot then
    redis.call('HSET', key, 'slot', slot)
  end
  if tick then
    redis.call('HSET', key, 'tick', tick)
  end
end
if seat == '' and (state == 1 or keep > 0) then
  local life = math.max(held, rest, paused, now + keep) - now
  if life > 0 then
    redis.call('PEXPIRE', key, life)
  end
end

local out = {'state', state, 'wait', wait, 'now', now, 'seat', seat, 'carry', carry, 'watch', watching}
for _, v in ipairs(reply) do
  out[#out + 1] = v
end
return out
