package queue_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

func TestNewRejectsInvalidNamesAndConfigs(t *testing.T) {
	t.Parallel()
	// New checks its arguments before any Redis call: no server needed.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	tests := []struct {
		name   string
		queue  string
		cfg    queue.Config
		target error
		says   string
	}{
		{"empty name", "", queue.Config{}, queue.ErrInvalidName, "name is empty"},
		{"brace in name", "a}b", queue.Config{}, queue.ErrInvalidName, `"}" at byte 1`},
		{"colon in name", "a:b", queue.Config{}, queue.ErrInvalidName, `":" at byte 1`},
		{"long name", strings.Repeat("x", 129), queue.Config{}, queue.ErrInvalidName, "longer than 128"},
		{"prefix", "q", queue.Config{Prefix: "a{b"}, queue.ErrInvalidConfig, "Prefix"},
		{"negative lease", "q", queue.Config{Lease: -time.Second}, queue.ErrInvalidConfig, "Lease"},
		{"sub-ms lease", "q", queue.Config{Lease: time.Microsecond}, queue.ErrInvalidConfig, "Lease"},
		{"max attempts", "q", queue.Config{MaxAttempts: -1}, queue.ErrInvalidConfig, "MaxAttempts"},
		{"max payload", "q", queue.Config{MaxPayload: -5}, queue.ErrInvalidConfig, "MaxPayload"},
		{"backoff base", "q", queue.Config{BackoffBase: -time.Second}, queue.ErrInvalidConfig, "BackoffBase"},
		{"backoff max below base", "q", queue.Config{BackoffBase: time.Minute, BackoffMax: time.Second}, queue.ErrInvalidConfig, "BackoffMax"},
		{"retention", "q", queue.Config{ResultRetention: -time.Hour}, queue.ErrInvalidConfig, "ResultRetention"},
		{"wait block", "q", queue.Config{WaitBlock: 500 * time.Millisecond}, queue.ErrInvalidConfig, "WaitBlock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := queue.New(rdb, tt.queue, tt.cfg)
			if q != nil || !errors.Is(err, tt.target) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("New(%q, %+v) = %v, %v; want %v saying %q", tt.queue, tt.cfg, q, err, tt.target, tt.says)
			}
		})
	}
	if _, err := queue.New(nil, "q", queue.Config{}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("New(nil client) = %v, want ErrInvalidArgument", err)
	}
}

func TestZeroConfigGetsDefaults(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, "orders", queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := q.Config()
	want := queue.Config{
		BackoffBase: time.Second, BackoffMax: 10 * time.Minute,
		Lease: 30 * time.Second, MaxAttempts: 5, MaxPayload: 1 << 20, Prefix: "worksteal",
		ResultRetention: 24 * time.Hour, WaitBlock: time.Second,
	}
	if !reflect.DeepEqual(got, want) { // the jitter stays nil: the default
		t.Fatalf("Config() = %+v, want %+v", got, want)
	}
	if q.Name() != "orders" || tagOf(q) != "{worksteal:q:orders}" {
		t.Fatalf("Name() = %q, tag %q", q.Name(), tagOf(q))
	}
}

func TestCountArgumentsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	for _, n := range []int{0, -1, queue.BatchMax + 1} {
		_, err := b.q.Claim(ctx, n)
		wantErr(t, err, queue.ErrInvalidArgument, "Claim")
	}
	if _, err := b.q.Claim(ctx, queue.BatchMax); err != nil {
		t.Fatalf("Claim(BatchMax): %v", err)
	}
	for _, it := range []queue.Item{{}, {ID: "x"}, {Token: "1"}} {
		wantErr(t, b.q.Ack(ctx, it, nil), queue.ErrInvalidArgument, "Ack of an unclaimed item")
		wantErr(t, b.q.Nack(ctx, it, nil), queue.ErrInvalidArgument, "Nack of an unclaimed item")
	}
	for _, f := range []func() error{
		func() error { _, err := b.q.Value(ctx, ""); return err },
		func() error { _, err := b.q.Result(ctx, ""); return err },
		func() error { _, err := b.q.Wait(ctx, ""); return err },
	} {
		wantErr(t, f(), queue.ErrInvalidArgument, "empty id")
	}
}

// Every key the queue writes carries its hash tag, so a cluster keeps the
// queue on one slot.
func TestEveryKeySharesTheHashTag(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: time.Millisecond, MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	mustEnqueue(t, b.q, "a", "b", "c", "d")
	items := mustClaim(t, b.q, 4, 4)
	waited := goWait(ctx, b.q, items[0].ID)
	blockedClients(t, b.rdb, 1)
	if err := b.q.Ack(ctx, items[0], []byte("r")); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, waited); string(r.result) != "r" || r.err != nil {
		t.Fatalf("Wait = %q, %v", r.result, r.err)
	}
	if err := b.q.Nack(ctx, items[1], errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, items[2].Deadline.Add(time.Millisecond))
	if n, err := qstore.Of(b.q).Tidy(ctx, 10); n != 2 || err != nil {
		t.Fatalf("Tidy = %d, %v; want 2", n, err)
	}
	keys, err := b.rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	tag := tagOf(b.q)
	want := map[string]bool{"pending": true, "leases": false, "values": true, "attempts": true, "ready": true,
		"causes": true, "delayed": true, "seq": true, "results": true, "expiring": true, "notify:" + items[0].ID: true,
		"dead": false, "waiting": false}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, tag+":")
		if !ok {
			t.Errorf("key %q lacks the hash tag %s", k, tag)
			continue
		}
		delete(want, rest)
	}
	for k, mustExist := range want {
		if mustExist {
			t.Errorf("no key %s:%s among %v", tag, k, keys)
		}
	}
}

func TestBackoffIsExponentialWithJitterAndCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, withJitter(queue.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 350 * time.Millisecond, MaxAttempts: 10},
		func() float64 { return 0.5 }))
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "x")[0]
	// With the jitter at 0.5 a delay d becomes 3d/4: 75, 150, 262.5 (capped at 350), ...
	for attempt, want := range []time.Duration{75, 150, 262, 262} {
		items := mustClaim(t, b.q, 1, 1)
		if items[0].Attempt != attempt+1 {
			t.Fatalf("attempt %d, want %d", items[0].Attempt, attempt+1)
		}
		before := redisNow(t, b.rdb)
		if err := b.q.Nack(ctx, items[0], errors.New("again")); err != nil {
			t.Fatal(err)
		}
		after := redisNow(t, b.rdb)
		due, err := b.rdb.ZScore(ctx, tagOf(b.q)+":delayed", id).Result()
		if err != nil {
			t.Fatal(err)
		}
		dueAt := time.UnixMilli(int64(due))
		lo, hi := before.Add(want*time.Millisecond).Add(-time.Millisecond), after.Add(want*time.Millisecond+time.Millisecond)
		if dueAt.Before(lo) || dueAt.After(hi) {
			t.Fatalf("retry %d due %v after the Nack, want %vms", attempt+1, dueAt.Sub(before), int(want))
		}
		untilRedisTime(t, b.rdb, dueAt)
		if n, err := qstore.Of(b.q).Promote(ctx, 10); n != 1 || err != nil {
			t.Fatalf("Promote = %d, %v; want 1", n, err)
		}
	}
}
