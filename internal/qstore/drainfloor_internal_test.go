package qstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

// floorClaim leases up to ARGV[1] items from the head of pending as
// claim.lua does (claimKeys; ARGV as claim.lua's), writing the same data:
// a lease in leases, the token in attempts, pending trimmed; and replying
// in the same form, every item at its first attempt. None of claim.lua's
// checks, maintenance or options.
const floorClaim = `
local n = tonumber(ARGV[1])
local t = redis.call('TIME')
local deadline = tostring(t[1] * 1000 + math.ceil(t[2] / 1000) + tonumber(ARGV[2]))
local suffix = '-' .. redis.call('INCR', KEYS[5])
local ids = redis.call('LRANGE', KEYS[1], -n, -1)
if #ids == 0 then
  return {deadline, 0, 0}
end
local values = redis.call('HMGET', KEYS[3], unpack(ids))
local leases, attempts, out = {'+inf', ARGV[3]}, {'', ARGV[3]}, {deadline, 0, 0, suffix, {}, 0}
local token = '1' .. suffix
local nl, no = 2, 6
for i = #ids, 1, -1 do
  local id = ids[i]
  leases[nl + 1], leases[nl + 2] = deadline, id
  attempts[nl + 1], attempts[nl + 2] = id, token
  nl = nl + 2
  out[no + 1], out[no + 2], out[no + 3] = id, values[i], 1
  no = no + 3
end
redis.call('ZADD', KEYS[2], unpack(leases))
redis.call('HSET', KEYS[4], unpack(attempts))
redis.call('LTRIM', KEYS[1], 0, -(#ids + 1))
out[no + 1] = {}
return out
`

// floorSettle acks items as settle.lua does (settleKeys; ARGV[1] the
// retention ms, ARGV[2] the encoding pin, then id, token, result per
// item), writing the same data: the result stored with its expiry, its
// entry in expiring, the lease, value, attempts and ready fields dropped.
// Only the token's check, none of settle.lua's others.
const floorSettle = `
local t = redis.call('TIME')
local prefix = tostring(t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])) .. ':'
local ids, n = {}, 0
for i = 3, #ARGV, 3 do
  n = n + 1
  ids[n] = ARGV[i]
end
local current = redis.call('HMGET', KEYS[3], unpack(ids))
local results, expiring, codes = {'', ARGV[2]}, {}, {}
local acks = 0
for i, id in ipairs(ids) do
  local token = ARGV[3 * i + 1]
  codes[i] = 0
  if current[i] == token then
    acks = acks + 1
    results[2 * acks + 1], results[2 * acks + 2] = id, prefix .. token .. ':' .. ARGV[3 * i + 2]
    expiring[acks] = prefix .. id
    codes[i] = 1
  end
end
redis.call('HSET', KEYS[9], unpack(results))
redis.call('RPUSH', KEYS[10], unpack(expiring))
redis.call('ZREM', KEYS[1], unpack(ids))
for k = 2, 4 do
  redis.call('HDEL', KEYS[k], unpack(ids))
end
return codes
`

// BenchmarkDrainFloor is what a no-op item's claim and its ack cost Redis
// (INFO commandstats around each call, batches of 100, b.N items each
// way), with this release's scripts (claim.lua, settle.lua) and with the
// floor scripts above: the least Lua that writes the same data per item,
// with none of the checks. Their batches alternate on one server, so that
// both meet the same load and hashes of the same size. The floor bounds
// what any script of this layout can save: issue 41 asked the drain for
// 30 % less (BENCHMARKS.md).
func BenchmarkDrainFloor(b *testing.B) {
	const batch = 100
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	q := New(rdb, "bench", Config{Lease: time.Minute, MaxAttempts: 3, ResultRetention: time.Hour, MaxPayload: 1 << 20})
	payloads := make([][]byte, batch)
	for i := range payloads {
		payloads[i] = []byte(`{"type":"loop","args":{"ID":1234,"At":0}}`)
	}
	rounds := max(b.N/batch, 1)
	for range 2 * rounds {
		if _, err := q.EnqueueBatchWith(ctx, payloads, EnqueueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	claimFloor, settleFloor := redis.NewScript(floorClaim), redis.NewScript(floorSettle)
	usec := func() int64 { return srv.CommandTimes(b)["evalsha"].Usec }
	// µs of [scripts, floor][claim, settle]
	var spent [2][2]int64
	outcomes := make([]Settlement, 0, batch)
	b.ResetTimer()
	for range rounds {
		t0 := usec()
		items, err := q.Claim(ctx, batch)
		if err != nil || len(items) != batch {
			b.Fatalf("Claim: %d items, %v", len(items), err)
		}
		t1 := usec()
		outcomes = outcomes[:0]
		for _, it := range items {
			outcomes = append(outcomes, Settlement{Item: it, Result: []byte("{}")})
		}
		if s, err := q.Settle(ctx, outcomes...); err != nil || s.Acked != batch {
			b.Fatalf("Settle: %+v, %v", s, err)
		}
		t2 := usec()
		reply, err := claimFloor.Run(ctx, rdb, q.k.claimKeys, batch, q.cfg.Lease.Milliseconds(), encodingPin, q.cfg.MaxAttempts).Slice()
		if err != nil || len(reply) != 7+3*batch {
			b.Fatalf("the floor's claim: %d values, %v", len(reply), err)
		}
		t3 := usec()
		args := []any{q.cfg.ResultRetention.Milliseconds(), encodingPin}
		for i := 6; i < len(reply)-1; i += 3 {
			args = append(args, reply[i], "1"+reply[3].(string), "{}")
		}
		codes, err := settleFloor.Run(ctx, rdb, q.k.settleKeys, args...).Int64Slice()
		if err != nil || len(codes) != batch || codes[0] != 1 || codes[batch-1] != 1 {
			b.Fatalf("the floor's settle: %v, %v", codes, err)
		}
		t4 := usec()
		spent[0][0] += t1 - t0
		spent[0][1] += t2 - t1
		spent[1][0] += t3 - t2
		spent[1][1] += t4 - t3
	}
	b.StopTimer()
	if d, err := q.Depth(ctx); err != nil || d != (Depth{}) {
		b.Fatalf("after the drain: %+v, %v; want every item acked", d, err)
	}
	if n, err := rdb.HLen(ctx, q.k.results).Result(); err != nil || n != int64(2*rounds*batch+1) {
		b.Fatalf("results: %d fields, %v; want %d and the pin", n, err, 2*rounds*batch)
	}
	items := float64(rounds * batch)
	for i, name := range []string{"scripts", "floor"} {
		b.ReportMetric(float64(spent[i][0])/items, name+"-claim-µs/item")
		b.ReportMetric(float64(spent[i][1])/items, name+"-settle-µs/item")
	}
	b.ReportMetric(float64(spent[1][0]+spent[1][1])/float64(spent[0][0]+spent[0][1]), "floor/scripts")
}
