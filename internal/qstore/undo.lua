-- Taking back writes, for the enqueue scripts (a part of theirs).
-- Redis does not roll a failed script back: a write that fails on a key
-- of the wrong type would leave the writes before it. Rather than read
-- every key first to learn its type (a command per key on every call),
-- a script runs the writes that may fail with redis.pcall, tests the
-- reply with failed, and when one fails takes back the writes before it,
-- last first, and raises that reply: a malformed key costs nothing until
-- a write meets it, and the call then leaves nothing behind. (A closure
-- per write would say it more briefly, at a cost on every call.)

-- failed says whether reply, a redis.pcall's, is an error.
local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

-- dropFields deletes fields (a table) from the hash key, and the field ""
-- (the encoding pin) too when added, what the HSET that wrote them and
-- the pin returned, says that it made it.
local function dropFields(key, fields, added)
  if added > #fields then
    redis.call('HDEL', key, '', unpack(fields))
  else
    redis.call('HDEL', key, unpack(fields))
  end
end
