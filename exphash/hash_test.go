package exphash_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/worksteal/worksteal/exphash"
)

func TestSetGetDelete(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	h := mustHash(t, rdb, testPrefix(t))
	values, expiry := h.Keys()
	if err := h.Set(ctx, "a", []byte("A"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := h.Set(ctx, "b", []byte("B"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Get(ctx, "a"); string(v) != "A" || err != nil {
		t.Fatalf("Get(a) = %q, %v", v, err)
	}
	// Expiry by Redis's clock: one hour from its TIME, to the millisecond.
	now := redisNow(t, rdb)
	if at, err := rdb.ZScore(ctx, expiry, "a").Result(); err != nil || at < float64(now.Add(time.Hour-time.Second).UnixMilli()) || at > float64(now.Add(time.Hour).UnixMilli()) {
		t.Fatalf("expiry of a = %v, %v; want Redis time + 1h", at, err)
	}
	waitExpired(t, rdb)
	// Expired, not yet evicted: hidden from Get, still in Redis.
	if v, err := h.Get(ctx, "b"); !errors.Is(err, exphash.ErrNotFound) {
		t.Fatalf("Get(b) after its expiry = %q, %v; want ErrNotFound", v, err)
	}
	if ok, err := rdb.HExists(ctx, values, "b").Result(); !ok || err != nil {
		t.Fatalf("HEXISTS b = %v, %v; want it still there until evicted", ok, err)
	}
	// Set again: a new value and a new expiry.
	if err := h.Set(ctx, "b", []byte("B2"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, err := h.Get(ctx, "b"); string(v) != "B2" || err != nil {
		t.Fatalf("Get(b) after a new Set = %q, %v", v, err)
	}
	// A field written without an expiry by other code never expires.
	rdb.HSet(ctx, values, "plain", "P")
	if v, err := h.Get(ctx, "plain"); string(v) != "P" || err != nil {
		t.Fatalf("Get(plain) = %q, %v", v, err)
	}
	if _, err := h.Get(ctx, "never-set"); !errors.Is(err, exphash.ErrNotFound) {
		t.Fatalf("Get(never-set) error %v, want ErrNotFound", err)
	}
	if n, err := h.Delete(ctx, "a", "b", "never-set"); n != 2 || err != nil {
		t.Fatalf("Delete = %d, %v; want 2", n, err)
	}
	if hlen, zcard := rdb.HLen(ctx, values).Val(), rdb.ZCard(ctx, expiry).Val(); hlen != 1 || zcard != 0 {
		t.Fatalf("after Delete: %d values, %d expiries; want only the plain field", hlen, zcard)
	}
}

// deleteChunk is how many fields one Delete script call takes, as documented.
const deleteChunk = 1000

// Delete takes any number of fields, a script call per 1,000 of them.
func TestDeleteMany(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	h := mustHash(t, rdb, testPrefix(t))
	fields := make([]string, deleteChunk+2)
	for i := range fields {
		fields[i] = "f" + strconv.Itoa(i)
	}
	for _, f := range []string{fields[0], fields[deleteChunk+1], "kept"} {
		if err := h.Set(ctx, f, []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.Delete(ctx, fields...); n != 2 || err != nil {
		t.Fatalf("Delete of %d fields = %d, %v; want the 2 that exist", len(fields), n, err)
	}
	values, expiry := h.Keys()
	if k := rdb.HKeys(ctx, values).Val(); len(k) != 1 || k[0] != "kept" || rdb.ZCard(ctx, expiry).Val() != 1 {
		t.Fatalf("left %v and %d expiries; want only kept", k, rdb.ZCard(ctx, expiry).Val())
	}
}

// Evict removes at most max expired fields a call, the longest expired
// first, counts them, and leaves live fields and fields set again alone.
func TestEvict(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	ctx := testContext(t)
	h := mustHash(t, rdb, testPrefix(t))
	values, expiry := h.Keys()
	setFields(t, h, "old-", 250, time.Millisecond)
	setFields(t, h, "live-", 10, time.Hour)
	waitExpired(t, rdb)
	// Set again after it expired, before any eviction: kept.
	if err := h.Set(ctx, "old-249", []byte("renewed"), time.Hour); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{100, 100, 49, 0} {
		if n, err := h.Evict(ctx, 100); n != want || err != nil {
			t.Fatalf("Evict %d = %d, %v; want %d", i, n, err, want)
		}
	}
	all, err := rdb.HGetAll(ctx, values).Result()
	if err != nil || len(all) != 11 || rdb.ZCard(ctx, expiry).Val() != 11 {
		t.Fatalf("left %d fields (%v), %d expiries; want the 10 live ones and old-249", len(all), err, rdb.ZCard(ctx, expiry).Val())
	}
	if all["old-249"] != "renewed" || all["live-3"] != "v:live-3" {
		t.Fatalf("left %v; want old-249 renewed and the live fields intact", all)
	}
}
