package exphash_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisClient starts a Redis for the test and returns a client of it.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	return redistest.Start(t).Client(t)
}

// offlineClient is never dialled: New makes no Redis call, and invalid
// arguments are refused before any.
func offlineClient(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// testPrefix is a valid key unique to the test (so tests may share a
// REDIS_URL instance).
func testPrefix(t testing.TB) string { return redistest.Prefix(t) }

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustHash(t testing.TB, rdb redis.Scripter, key string) *exphash.Hash {
	t.Helper()
	h, err := exphash.New(rdb, key)
	if err != nil {
		t.Fatalf("New(%q): %v", key, err)
	}
	return h
}

// setFields sets prefix0..prefix(n-1) to "v:"+field with the given ttl.
func setFields(t testing.TB, h *exphash.Hash, prefix string, n int, ttl time.Duration) {
	t.Helper()
	for i := range n {
		f := prefix + strconv.Itoa(i)
		if err := h.Set(context.Background(), f, []byte("v:"+f), ttl); err != nil {
			t.Fatalf("Set(%q): %v", f, err)
		}
	}
}

// redisNow reads Redis's clock, the one expiries use.
func redisNow(t testing.TB, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// waitExpired waits until a field set with ttl 1ms just now has expired,
// polling Redis's clock.
func waitExpired(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	until := redisNow(t, rdb).Add(2 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for !redisNow(t, rdb).After(until) {
		if time.Now().After(deadline) {
			t.Fatalf("Redis time still not past %v", until)
		}
		time.Sleep(time.Millisecond)
	}
}
