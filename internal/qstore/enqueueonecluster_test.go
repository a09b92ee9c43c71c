package qstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// On a 3-master cluster, the usual enqueue reaches the keys it names after
// the queue's hash tag rather than being sent them (limits, dead, weights,
// lanes, a priority's lane): with every option, a duplicate gets the live
// holder, a dead holder's lock is taken over, a handed-on lock answers
// with its first item, and a malformed limits fails the call with nothing
// written.
func TestEnqueueOneOnCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.StartCluster(t).Client(t)
	ctx := testContext(t)
	q, err := queue.New(rdb, "jobs", queue.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := qstore.Of(q)
	tag := tagOf(s)
	if err := s.SetPriorities(ctx, map[string]int{"high": 2}); err != nil {
		t.Fatal(err)
	}
	now := qstore.EnqueueOptions{Unique: "u", UniqueFor: time.Hour, MaxAttempts: 3, Priority: "high"}
	later := now
	later.Unique, later.Delay = "v", time.Hour
	a := mustEnqueueWith(t, s, "a", now, false)
	b := mustEnqueueWith(t, s, "b", later, false)
	if dup := mustEnqueueWith(t, s, "c", now, true); dup != a {
		t.Fatalf("duplicate of %s got %s", a, dup)
	}
	if err := rdb.ZAdd(ctx, tag+":dead", redis.Z{Score: 1, Member: b}).Err(); err != nil {
		t.Fatal(err)
	}
	c := mustEnqueueWith(t, s, "c", later, false)
	if err := rdb.HSet(ctx, tag+":unique:u", "first", "chain").Err(); err != nil {
		t.Fatal(err)
	}
	if dup := mustEnqueueWith(t, s, "d", now, true); dup != "chain" {
		t.Fatalf("duplicate of a handed-on lock got %s, want its first item", dup)
	}
	for key, want := range map[string]int64{":limits": 4, ":lanes": 3, ":pending:high": 1, ":delayed": 2} {
		var n int64
		switch key {
		case ":pending:high":
			n, err = rdb.LLen(ctx, tag+key).Result()
		case ":delayed":
			n, err = rdb.ZCard(ctx, tag+key).Result()
		default:
			n, err = rdb.HLen(ctx, tag+key).Result()
		}
		if n != want || err != nil {
			t.Errorf("%s holds %d (%v), want %d", key, n, err, want)
		}
	}
	if holder, err := rdb.HGet(ctx, tag+":unique:v", "id").Result(); holder != c || err != nil {
		t.Fatalf("lock v held by %s (%v), want %s", holder, err, c)
	}

	if err := rdb.Rename(ctx, tag+":limits", tag+":limits-saved").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, tag+":limits", "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	values, _ := rdb.HLen(ctx, tag+":values").Result()
	opts := now
	opts.Unique = "w"
	if _, _, err := s.EnqueueWith(ctx, []byte("e"), opts); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("EnqueueWith with limits malformed = %v, want WRONGTYPE", err)
	}
	if n, _ := rdb.HLen(ctx, tag+":values").Result(); n != values {
		t.Fatalf("values went from %d to %d on a failed call", values, n)
	}
	if n, _ := rdb.Exists(ctx, tag+":unique:w").Result(); n != 0 {
		t.Fatal("a failed call took its unique key")
	}
}
