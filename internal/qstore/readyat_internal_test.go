package qstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

// The scripts read a fresh item's ready time from its id: idTime must give
// back the ms newID put in, for ids of any time, and nothing for an id of
// another form.
func TestIDTimeReadsNewID(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	idTime := redis.NewScript(mustAssemble("readyat", "") + "return idTime(ARGV[1])")
	for range 200 {
		before := time.Now().UnixMilli()
		id := newID()
		after := time.Now().UnixMilli()
		got, err := idTime.Run(ctx, rdb, nil, id).Int64()
		if err != nil || got < before || got > after {
			t.Fatalf("idTime(%s) = %d, %v; want in [%d, %d]", id, got, err, before, after)
		}
	}
	for _, id := range []string{"", "JOIN.1", "abcdefghijklmnopqrstuvwxy", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789abcdefghijklmnop"} {
		if err := idTime.Run(ctx, rdb, nil, id).Err(); err != redis.Nil {
			t.Errorf("idTime(%q) = %v, want nil", id, err)
		}
	}
}

// An enqueue writes no ready time, yet the oldest pending item's wait and
// an item's ready time are read as before: from its id, until a later one
// (a promotion) is written.
func TestReadyTimeOfAFreshItemIsItsIDs(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	q := testStore(rdb, "ready", Config{})
	ctx := context.Background()
	before := time.Now()
	id, err := q.Enqueue(ctx, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, q.k.ready).Result(); n != 0 || err != nil {
		t.Fatalf("the ready hash exists (%d, %v) after an enqueue", n, err)
	}
	info, err := q.Item(ctx, id, 0)
	if err != nil || info.At.Before(before.Truncate(time.Millisecond)) || info.At.After(time.Now()) {
		t.Fatalf("Item = %+v, %v; want At between the enqueue's start (%v) and now", info, err, before)
	}
	time.Sleep(50 * time.Millisecond)
	d, err := q.Depth(ctx)
	if err != nil || d.Pending != 1 || d.OldestPending < 50*time.Millisecond || d.OldestPending > time.Since(before)+time.Second {
		t.Fatalf("Depth = %+v, %v; want 1 pending that waited at least 50ms", d, err)
	}
	// A later ready time wins: the item delayed, then run now.
	later := before.Add(-time.Hour).UnixMilli()
	if err := rdb.HSet(ctx, q.k.ready, id, later).Err(); err != nil {
		t.Fatal(err)
	}
	if info, err := q.Item(ctx, id, 0); err != nil || info.At.UnixMilli() != later {
		t.Fatalf("Item = %+v, %v; want At %d, the ready hash's", info, err, later)
	}
}
