package drain

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// A batch's start decides without Redis while its latest read (its claim,
// or a poll) is fresher than qstore.StartFence; past it, the start reads
// which items are canceled first, once for all those yet to start, and
// passes over the canceled ones; if that read fails, nothing starts. This
// is the half of "once Cancel returns nil, the task never starts" that
// the drain keeps when its polls are late; Cancel's wait is the other.
func TestCancelWatchReadsBeforeAStaleStart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb, rt := srv.Client(t), &redistest.RoundTrips{}
	rdb.AddHook(rt)
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: time.Minute}
	q, err := queue.New(rdb, "watch", cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := qstore.Of(q)
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if _, err := q.EnqueueBatch(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")}); err != nil {
		t.Fatal(err)
	}
	items, err := st.Claim(ctx, 3)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d items, %v", len(items), err)
	}
	if _, err := st.Cancel(ctx, items[1].ID); err != nil {
		t.Fatal(err)
	}
	j := &drainJob{q: st, cfg: Config{Batching: Batching{RedisTimeout: time.Second}}}

	// Fresh from its claim: no read, so a start does not see a later cancel
	// (which is why Cancel waits out the fence).
	fresh := j.watchCancels(ctx, items, time.Now())
	before := rt.Load()
	if _, v := fresh.start(ctx, 0); v != startRun {
		t.Fatalf("a fresh start of an item not canceled = %d, want startRun", v)
	}
	fresh.untrack(0)
	if n := rt.Load() - before; n != 0 {
		t.Fatalf("a fresh start made %d round trips, want none", n)
	}
	fresh.close()

	// Claimed a fence ago and never polled: the first start reads, for
	// the items yet to start, and the canceled one is passed over.
	stale := j.watchCancels(ctx, items, time.Now().Add(-qstore.StartFence))
	defer stale.close()
	before = rt.Load()
	verdicts := make([]startVerdict, len(items))
	for i := range items {
		var ictx context.Context
		if ictx, verdicts[i] = stale.start(ctx, i); ictx != nil {
			stale.untrack(i)
		}
	}
	if want := []startVerdict{startRun, startCanceled, startRun}; !slices.Equal(verdicts, want) {
		t.Fatalf("stale starts = %v, want %v", verdicts, want)
	}
	if n := rt.Load() - before; n != 1 {
		t.Fatalf("three stale starts made %d round trips, want 1", n)
	}

	// A read that fails starts nothing: the drain hands the item back.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer func() { _ = down.Close() }()
	dq, err := queue.New(down, "watch", cfg)
	if err != nil {
		t.Fatal(err)
	}
	j = &drainJob{q: qstore.Of(dq), cfg: Config{Batching: Batching{RedisTimeout: time.Second}}}
	unread := j.watchCancels(ctx, items, time.Now().Add(-qstore.StartFence))
	defer unread.close()
	if ictx, v := unread.start(ctx, 0); v != startUnread || ictx != nil {
		t.Fatalf("a start whose read failed = %d, want startUnread", v)
	}
}
