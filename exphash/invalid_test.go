package exphash_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/exphash"
)

func TestArguments(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	if _, err := exphash.New(nil, "k"); !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "nil Redis client") {
		t.Errorf("New(nil) error %v, want ErrInvalidArgument naming the client", err)
	}
	if _, err := exphash.New(rdb, ""); !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "empty key") {
		t.Errorf("New(\"\") error %v, want ErrInvalidArgument naming the empty key", err)
	}
	for _, key := range []string{"a{b", "}a", "a{}b", "{}", "}", "{", "}{", "a}b{c", "{}x"} {
		if _, err := exphash.New(rdb, key); !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "key "+strconv.Quote(key)) {
			t.Errorf("New(%q): %v, want ErrInvalidArgument naming the key", key, err)
		}
	}
}

// Invalid arguments are refused before any Redis call (the client is
// never dialled, so a call would fail): a ttl below 1ms, however negative,
// naming ttl; an Evict max outside [1, 1000], naming max. An empty Delete
// is a no-op.
func TestInvalidArgumentsMakeNoCall(t *testing.T) {
	t.Parallel()
	h := mustHash(t, offlineClient(t), "k")
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, math.MinInt64, -time.Second, time.Millisecond - 1} {
		if err := h.Set(ctx, "f", []byte("v"), ttl); !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl") {
			t.Errorf("Set with ttl %v: %v, want ErrInvalidArgument naming ttl", ttl, err)
		}
	}
	for _, max := range []int{0, -1, 1001, math.MinInt, math.MaxInt} {
		if n, err := h.Evict(ctx, max); n != 0 || !errors.Is(err, exphash.ErrInvalidArgument) || !strings.Contains(err.Error(), "max") {
			t.Errorf("Evict(%d) = %d, %v; want ErrInvalidArgument naming max", max, n, err)
		}
	}
	if n, err := h.Delete(ctx); n != 0 || err != nil {
		t.Errorf("Delete() = %d, %v; want 0, nil", n, err)
	}
}

// The layout is documented: users read these keys, and the cluster test
// of the jobs package checks that each pair shares a slot.
func TestKeys(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	for key, want := range map[string][2]string{
		"sessions":          {"{sessions}:values", "{sessions}:expiry"},
		"app:sessions":      {"{app:sessions}:values", "{app:sessions}:expiry"},
		"app:{t7}:sessions": {"app:{t7}:sessions:values", "app:{t7}:sessions:expiry"},
		"{x}":               {"{x}:values", "{x}:expiry"},
	} {
		h := mustHash(t, rdb, key)
		if v, e := h.Keys(); v != want[0] || e != want[1] {
			t.Errorf("New(%q).Keys() = %q, %q; want %q, %q", key, v, e, want[0], want[1])
		}
		if h.Name() != key {
			t.Errorf("New(%q).Name() = %q", key, h.Name())
		}
	}
}

// A huge ttl is accepted, and must work: Redis takes the expiry, and the
// field reads back.
func TestHugeTTL(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	h := mustHash(t, rdb, testPrefix(t))
	ctx := testContext(t)
	for _, ttl := range []time.Duration{math.MaxInt64, 100 * 365 * 24 * time.Hour} {
		if err := h.Set(ctx, "f", []byte("v"), ttl); err != nil {
			t.Fatalf("Set with ttl %v: %v", ttl, err)
		}
		if v, err := h.Get(ctx, "f"); err != nil || string(v) != "v" {
			t.Fatalf("Get after Set with ttl %v = %q, %v", ttl, v, err)
		}
	}
}
