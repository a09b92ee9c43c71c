package qstore_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

func enqueueWithPriority(t testing.TB, q *qstore.Store, p string, n int) {
	t.Helper()
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte(p)
	}
	if _, err := q.EnqueueBatchWith(context.Background(), payloads, qstore.EnqueueOptions{Priority: p}); err != nil {
		t.Fatalf("EnqueueBatchWith(%s): %v", p, err)
	}
}

// claimOrder is the order in which items were leased, fleet-wide: by
// their claim's number (the token's), then their place in the claim.
type leased struct {
	claim, at int
	priority  string
}

// With three weights all backlogged, three processes claiming batches of
// 1, 7 and 10 at once lease 6:3:1 of them within 10 %, and among any 10
// consecutive leases the lightest has one: never starved.
func TestPrioritiesShareByWeight(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			t.Parallel()
			var fleet [3]redis.UniversalClient
			if cluster {
				c := redistest.StartCluster(t)
				for i := range fleet {
					fleet[i] = c.Client(t)
				}
			} else {
				srv := redistest.Start(t)
				for i := range fleet {
					fleet[i] = srv.Client(t)
				}
			}
			prefix := redistest.Prefix(t)
			var stores []*qstore.Store
			for _, rdb := range fleet {
				q, err := queue.New(rdb, "jobs", queue.Config{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				stores = append(stores, qstore.Of(q))
			}
			ctx := testContext(t)
			if err := stores[0].SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1}); err != nil {
				t.Fatal(err)
			}
			enqueueWithPriority(t, stores[0], "low", 400)
			enqueueWithPriority(t, stores[1], "default", 700)
			enqueueWithPriority(t, stores[2], "critical", 1000)
			wantCounts(t, stores[0], qstore.Depth{Pending: 2100})

			const total = 1000 // every lane stays backlogged
			var mu sync.Mutex
			var order []leased
			var wg sync.WaitGroup
			for i, q := range stores {
				batch := []int{1, 7, 10}[i]
				wg.Go(func() {
					for {
						mu.Lock()
						done := len(order) >= total
						mu.Unlock()
						if done {
							return
						}
						items, err := q.Claim(ctx, batch)
						if err != nil || len(items) == 0 {
							t.Errorf("Claim(%d) = %d items, %v", batch, len(items), err)
							return
						}
						claim, _ := strconv.Atoi(items[0].Token[strings.IndexByte(items[0].Token, '-')+1:])
						mu.Lock()
						for at, it := range items {
							order = append(order, leased{claim: claim, at: at, priority: string(it.Payload)})
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			slices.SortFunc(order, func(a, b leased) int { return cmpInts(a.claim, b.claim, a.at, b.at) })
			order = order[:total]
			got := map[string]int{}
			sinceLow := 0
			for i, l := range order {
				got[l.priority]++
				if sinceLow++; l.priority == "low" {
					sinceLow = 0
				}
				if sinceLow >= 10 {
					t.Fatalf("leases %d to %d have no low one", i-9, i)
				}
			}
			for p, share := range map[string]float64{"critical": 0.6, "default": 0.3, "low": 0.1} {
				want := share * total
				if g := float64(got[p]); g < want*0.9 || g > want*1.1 {
					t.Errorf("%s had %d of %d leases, want %.0f ± 10 %%", p, got[p], total, want)
				}
			}
			t.Logf("leases by priority: %v", got)
		})
	}
}

func cmpInts(a1, b1, a2, b2 int) int {
	if a1 != b1 {
		return a1 - b1
	}
	return a2 - b2
}

// An empty lane is skipped and banks nothing: the others share its
// place, and when it fills again it gets its share, no burst.
func TestPrioritiesSkipEmptyLanes(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"critical": 6, "low": 1}); err != nil {
		t.Fatal(err)
	}
	enqueueWithPriority(t, b.q, "low", 30)
	if got := len(mustClaim(t, b.q, 10, 10)); got != 10 {
		t.Fatalf("claimed %d of the low lane alone", got)
	}
	enqueueWithPriority(t, b.q, "critical", 30)
	items := mustClaim(t, b.q, 7, 7)
	lows := 0
	for _, it := range items {
		if string(it.Payload) == "low" {
			lows++
		}
	}
	if lows != 1 {
		t.Fatalf("7 leases after the critical lane filled had %d low ones, want 1", lows)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 43, Leased: 17})
}

// An item keeps its priority through a retry, a release and a requeue
// from the dead letters, and hands it to the follow-up its ack enqueues
// (a chain's next step); the lanes hash forgets acked items.
func TestPriorityIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: 1, BackoffMax: 1, MaxAttempts: 2})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"urgent": 5}); err != nil {
		t.Fatal(err)
	}
	lane := tagOf(b.q) + ":pending:urgent"
	inLane := func(want int64) {
		t.Helper()
		if n, err := b.rdb.LLen(ctx, lane).Result(); n != want || err != nil {
			t.Fatalf("urgent lane holds %d (%v), want %d", n, err, want)
		}
	}
	if _, _, err := b.q.EnqueueWith(ctx, []byte("u"), qstore.EnqueueOptions{Priority: "urgent"}); err != nil {
		t.Fatal(err)
	}
	inLane(1)
	it := mustClaim(t, b.q, 1, 1)[0]
	if n, err := b.q.Release(ctx, it); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	inLane(1)
	it = mustClaim(t, b.q, 1, 1)[0]
	if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, dueOf(t, b, it.ID))
	if n, err := b.q.Promote(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Promote = %d, %v", n, err)
	}
	inLane(1)
	it = mustClaim(t, b.q, 1, 1)[0]
	if err := b.q.Nack(ctx, it, errors.New("dead")); err != nil { // its last attempt
		t.Fatal(err)
	}
	if n, err := b.q.RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	inLane(1)
	wantCounts(t, b.q, qstore.Depth{Pending: 1})
	it = mustClaim(t, b.q, 1, 1)[0]
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, FollowUp: &qstore.FollowUp{Payload: []byte("next")}}); err != nil {
		t.Fatal(err)
	}
	inLane(1)
	it = mustClaim(t, b.q, 1, 1)[0]
	if string(it.Payload) != "next" {
		t.Fatalf("claimed %q, want the follow-up", it.Payload)
	}
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	if n := itemFields(t, b.rdb, tagOf(b.q)+":lanes"); n != 0 {
		t.Fatalf("lanes holds %d items after the ack", n)
	}
}

// A priority without a weight, or a bad one, is refused with nothing
// added; weights read back as set.
func TestPrioritiesChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if _, _, err := b.q.EnqueueWith(ctx, []byte("x"), qstore.EnqueueOptions{Priority: "nope"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("EnqueueWith of an unknown priority = %v, want ErrInvalidArgument", err)
	}
	if _, err := b.q.EnqueueBatchWith(ctx, [][]byte{[]byte("x")}, qstore.EnqueueOptions{Priority: "nope"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("EnqueueBatchWith of an unknown priority = %v, want ErrInvalidArgument", err)
	}
	if _, _, err := b.q.EnqueueWith(ctx, []byte("x"), qstore.EnqueueOptions{Priority: "bad name"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("EnqueueWith of a bad priority = %v, want ErrInvalidArgument", err)
	}
	wantCounts(t, b.q, qstore.Depth{})
	for _, bad := range []map[string]int{nil, {"x": 0}, {"x": 1001}, {"": 1}, {"a b": 1}} {
		if err := b.q.SetPriorities(ctx, bad); !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("SetPriorities(%v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if err := b.q.SetPriorities(ctx, map[string]int{"high": 4, "default": 2}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.q.Priorities(ctx); err != nil || len(got) != 2 || got["high"] != 4 || got["default"] != 2 {
		t.Fatalf("Priorities = %v, %v", got, err)
	}
}

// An expired lease hands its item back to its lane.
func TestPriorityKeptThroughAnExpiredLease(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 100 * time.Millisecond})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"urgent": 5}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.q.EnqueueWith(ctx, []byte("u"), qstore.EnqueueOptions{Priority: "urgent"}); err != nil {
		t.Fatal(err)
	}
	it := mustClaim(t, b.q, 1, 1)[0]
	untilRedisTime(t, b.rdb, it.Deadline)
	if n, err := b.q.Tidy(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Tidy = %d, %v", n, err)
	}
	if n, err := b.rdb.LLen(ctx, tagOf(b.q)+":pending:urgent").Result(); n != 1 || err != nil {
		t.Fatalf("urgent lane holds %d (%v), want 1", n, err)
	}
	if again := mustClaim(t, b.q, 1, 1)[0]; again.ID != it.ID || again.Attempt != 2 {
		t.Fatalf("claimed %s at attempt %d, want %s at 2", again.ID, again.Attempt, it.ID)
	}
}

// An empty poll of a queue with priorities writes nothing, as one without.
func TestPrioritiesIdleClaimWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"high": 2, "low": 1}); err != nil {
		t.Fatal(err)
	}
	before := b.srv.CommandStats(t)
	mustClaim(t, b.q, 10, 0)
	after := b.srv.CommandStats(t)
	for _, cmd := range []string{"incr", "hset", "ltrim", "zadd"} {
		if after[cmd] != before[cmd] {
			t.Errorf("an empty poll sent %s %d times", cmd, after[cmd]-before[cmd])
		}
	}
	if got := after["llen"] - before["llen"]; got != 3 {
		t.Errorf("an empty poll sent LLEN %d times, want 3: pending and two lanes", got)
	}
}
