package jobs_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// The exact bounds, which config_test.go covers only from afar: each limit
// is accepted, one step past it is refused naming the field.
func TestConfigBoundsAreExact(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	q := newQueue(t, rdb, "bounds", queue.Config{})
	tidy := func(c jobs.TidyConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.TidyStale(q, c) }
	}
	drain := func(c jobs.DrainConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.Drain(q, nopHandler, c) }
	}
	members := func(c jobs.EvictConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.EvictExpiredMembers(rdb, "k", c) }
	}
	for _, tc := range []struct {
		field      string
		ok, refuse func() (recruiter.Job, error)
	}{
		{"Batch", tidy(jobs.TidyConfig{Batch: jobs.BatchMax}), tidy(jobs.TidyConfig{Batch: jobs.BatchMax + 1})},
		{"Batch", drain(jobs.DrainConfig{Batch: 1}), drain(jobs.DrainConfig{Batch: math.MinInt})},
		{"MaxBatches", drain(jobs.DrainConfig{MaxBatches: math.MaxInt}), drain(jobs.DrainConfig{MaxBatches: math.MinInt})},
		{"RedisTimeout", tidy(jobs.TidyConfig{RedisTimeout: 10 * time.Second}), tidy(jobs.TidyConfig{RedisTimeout: 10*time.Second + 1})},
		{"RedisTimeout", drain(jobs.DrainConfig{RedisTimeout: time.Millisecond}), drain(jobs.DrainConfig{RedisTimeout: time.Millisecond - 1})},
		{"ScoreUnit", members(jobs.EvictConfig{ScoreUnit: time.Hour}), members(jobs.EvictConfig{ScoreUnit: time.Millisecond - 1})},
		{"ScoreUnit", members(jobs.EvictConfig{ScoreUnit: time.Second}), members(jobs.EvictConfig{ScoreUnit: math.MinInt64})},
		{"Name", tidy(jobs.TidyConfig{Name: strings.Repeat("n", 128)}), tidy(jobs.TidyConfig{Name: "x}:lock:{y"})},
		{"Name", members(jobs.EvictConfig{Name: "a.b_c-d"}), members(jobs.EvictConfig{Name: "*"})},
	} {
		if job, err := tc.ok(); err != nil || job == nil {
			t.Errorf("%s at its bound: %v, %v; want a job", tc.field, job, err)
		}
		job, err := tc.refuse()
		if job != nil || !errors.Is(err, jobs.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s past its bound: %v, %v; want ErrInvalidConfig naming it", tc.field, job, err)
		}
	}
}

// ExpiringHash's arguments: a ttl below 1ms, however negative, is refused
// naming ttl before any Redis call; an empty Delete is a no-op without one
// (the client is never dialled, so a call would fail).
func TestExpiringHashInvalidArguments(t *testing.T) {
	t.Parallel()
	h, err := jobs.NewExpiringHash(offlineClient(t), "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ttl := range []time.Duration{math.MinInt64, -time.Second, time.Millisecond - 1} {
		if err := h.Set(ctx, "f", []byte("v"), ttl); !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl") {
			t.Errorf("Set with ttl %v: %v, want ErrInvalidArgument naming ttl", ttl, err)
		}
	}
	if n, err := h.Delete(ctx); n != 0 || err != nil {
		t.Errorf("Delete() = %d, %v; want 0, nil", n, err)
	}
	for _, key := range []string{"}", "{", "}{", "a}b{c", "{}x"} {
		if _, err := jobs.NewExpiringHash(offlineClient(t), key); !errors.Is(err, jobs.ErrInvalidArgument) || !strings.Contains(err.Error(), "key") {
			t.Errorf("NewExpiringHash(%q): %v, want ErrInvalidArgument naming the key", key, err)
		}
	}
}

// A huge ttl is accepted, and must work: Redis takes the expiry, and the
// field reads back.
func TestExpiringHashHugeTTL(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t)
	h, err := jobs.NewExpiringHash(rdb, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
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
