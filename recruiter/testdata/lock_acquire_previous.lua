-- Acquire: take the job's lock for a slice, or say why not and for how long.
-- The lock is a hash. token, held: the running slice's token and the Redis
-- time (ms) until which it holds the lock. rest: until when the job rests
-- after a slice (fixed pace with Every). paused: until when an operator
-- paused the job. Automatic pace adds slot (the last slot whose run was
-- taken), streak (slices in a row that reported a backlog), and the
-- pacer's count: vslot (the slot counted), visits (the weighted visits in
-- it), fleet (the weighted visits per slot, smoothed: an estimate of
-- the number of processes that visit) and folds (the slots folded into it).
-- A schedule adds tick (the latest tick taken, or skipped while paused)
-- and counts its visits per tick in vslot, visits and fleet.
-- KEYS[1]: the lock key
-- ARGV[1]: a new token   ARGV[2]: the lock's TTL, ms   ARGV[3]: Every, ms (0: none)
-- ARGV[4]: '1' for automatic pace, which reads ARGV[5]: this visit's weight
-- (the mean slots between its process's visits), ARGV[6]: the slots' phase, ms,
-- ARGV[7]: how long its state outlives a visit, ms; '2' for a schedule,
-- which reads ARGV[5] (the weight: 1 over the visit's chance), ARGV[7]
-- and ARGV[8]: the tick this visit would run, unix ms
-- ARGV[9]: '1' for a woken visit (an enqueue asked for it), which takes
-- the lock while the job rests (its slot's run taken, or its cooldown),
-- though not while a slice runs or it is paused
-- ARGV[10]: how many slices of the job may run at once (1 or more). While
-- a slice holds the lock, a visit of a backlog's streak or a woken one
-- (automatic pace), or any visit (a fixed rate), takes a seat beside it
-- if one is free: fields s1 … s(n-1), each 'token:held' (held: Redis ms)
-- ARGV[11]: automatic pace and a schedule: when this visit's process
-- started, as 20 digits (unix µs, then a random tie-break), which compare
-- as strings ('' for a woken visit); ARGV[12]: ms of silence after which the carrier is taken
-- for gone. The carrier (fields carrier and carried: its start and Redis
-- ms of its last visit) is the oldest process that visits: it visits every
-- slot (or tick), so that a slot's run does not hang on random visits; a
-- visit of an older process, or any once the carrier has been silent that
-- long, makes its process the carrier.
-- Returns {code, wait, left, fleet, streak, folds, now, tick, seat, carry}: code 1 taken,
-- 2 a slice runs, 3 resting (a schedule: its tick taken, or not yet come),
-- 4 paused; wait: ms until that changes (-1: an older version's
-- lock without expiry); left: ms until the slot ends (automatic pace);
-- fleet: the estimate, as a string ('' if none yet); streak; folds; now:
-- Redis's clock, ms; tick: a schedule's latest tick taken (0 if none);
-- seat: the field of the seat taken, '' for the lock itself; carry: 1 if
-- this visit's process carries the job's visits, else 0.
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local f = redis.pcall('HMGET', key, 'token', 'held', 'rest', 'paused', 'slot', 'streak', 'vslot', 'visits', 'fleet', 'folds', 'tick', 'carrier', 'carried')
if f.err then
  -- The string lock of earlier versions, met during a rolling upgrade:
  -- respect it as it says.
  local pttl = redis.call('PTTL', key)
  if redis.call('GET', key) == 'cooldown' then
    return {3, pttl, 0, '', 0, 0, now, 0, '', 0}
  end
  return {2, pttl, 0, '', 0, 0, now, 0, '', 0}
end

local held = tonumber(f[2]) or 0
local rest = tonumber(f[3]) or 0
local paused = tonumber(f[4]) or 0
local streak = tonumber(f[6]) or 0
local ttl = tonumber(ARGV[2])
local code, wait, left, estimate, keep, folds = 1, 0, 0, '', 0, 0
local slot, tick
local last = tonumber(f[11]) or 0
local woken = ARGV[9] == '1'
local slices = tonumber(ARGV[10]) or 1

if ARGV[4] == '1' then
  local every = tonumber(ARGV[3])
  local phase = tonumber(ARGV[6])
  slot = math.floor((now - phase) / every)
  left = (slot + 1) * every + phase - now
  keep = tonumber(ARGV[7])
  -- Count this visit, weighted so that a slot's sum estimates the
  -- processes that visit; fold a finished slot into the smoothed estimate,
  -- and each slot that had no visit at all as a zero.
  local vslot, visits, fleet = tonumber(f[7]), tonumber(f[8]) or 0, tonumber(f[9])
  folds = tonumber(f[10]) or 0
  if vslot ~= slot then
    if vslot and vslot < slot then
      if fleet then fleet = fleet + 0.125 * (visits - fleet) else fleet = visits end
      fleet = fleet * 0.875 ^ math.min(slot - vslot - 1, 64)
      folds = math.min(folds + 1, 99)
      redis.call('HSET', key, 'folds', folds)
    end
    visits = 0
  end
  visits = visits + tonumber(ARGV[5])
  redis.call('HSET', key, 'vslot', slot, 'visits', visits)
  if fleet then
    redis.call('HSET', key, 'fleet', fleet)
  end
  -- Until a slot has been folded, the count so far.
  estimate = tostring(fleet or visits)
  if paused > now then
    code, wait = 4, paused - now
  elseif f[1] and held > now and slices > 1 and (woken or streak > 0) then
    code, wait = 2, held - now -- a seat beside it may be free
  elseif tonumber(f[5]) == slot and not woken then
    code, wait = 3, left
  elseif f[1] and held > now then
    code, wait = 2, held - now
  end
elseif ARGV[4] == '2' then
  tick = tonumber(ARGV[8])
  keep = tonumber(ARGV[7])
  -- Count this visit as automatic pace does, per tick: the sum of a
  -- tick's weights estimates the processes that visit.
  local vslot, visits, fleet = tonumber(f[7]), tonumber(f[8]) or 0, tonumber(f[9])
  if vslot ~= tick then
    if vslot and vslot < tick then
      if fleet then fleet = fleet + 0.25 * (visits - fleet) else fleet = visits end
      redis.call('HSET', key, 'fleet', fleet)
    end
    visits = 0
  end
  visits = visits + tonumber(ARGV[5])
  redis.call('HSET', key, 'vslot', tick, 'visits', visits)
  estimate = tostring(fleet or visits)
  if tick > now then
    code, wait = 3, tick - now
  elseif tick <= last then
    code = 3
  elseif paused > now then
    -- A tick while paused is skipped, not queued for the resume.
    code, wait, last = 4, paused - now, tick
    redis.call('HSET', key, 'tick', tick)
  elseif f[1] and held > now then
    code, wait = 2, held - now
  end
else
  if paused > now then
    code, wait = 4, paused - now
  elseif f[1] and held > now then
    code, wait = 2, held - now
  elseif rest > now and not woken then
    code, wait = 3, rest - now
  end
end

-- The carrier: kept while it visits, taken over by an older process or
-- once it has been silent.
local carry = 0
local born = ARGV[11]
if born and born ~= '' and ARGV[4] ~= '0' then
  local carrier, carried = f[12], tonumber(f[13]) or 0
  if not carrier or born <= carrier or now - carried > tonumber(ARGV[12]) then
    redis.call('HSET', key, 'carrier', ARGV[11], 'carried', now)
    carry = 1
  end
end

-- A seat beside the running slice.
if code == 2 and slices > 1 and (ARGV[4] == '0' or woken or streak > 0) then
  for i = 1, slices - 1 do
    local seat = 's' .. i
    local v = redis.call('HGET', key, seat)
    local ends = v and tonumber(string.match(v, ':(%d+)$')) or 0
    if ends <= now then
      redis.call('HSET', key, seat, ARGV[1] .. ':' .. (now + ttl))
      if redis.call('PTTL', key) < ttl then
        redis.call('PEXPIRE', key, ttl)
      end
      return {1, 0, left, estimate, streak, folds, now, last, seat, carry}
    end
  end
end

if code == 1 then
  held = now + ttl
  redis.call('HSET', key, 'token', ARGV[1], 'held', held)
  if slot then
    redis.call('HSET', key, 'slot', slot)
  end
  if tick then
    last = tick
    redis.call('HSET', key, 'tick', tick)
  end
end
if code == 1 or keep > 0 then
  local life = math.max(held, rest, paused, now + keep) - now
  if life > 0 then
    redis.call('PEXPIRE', key, life)
  end
end
return {code, wait, left, estimate, streak, folds, now, last, '', carry}
