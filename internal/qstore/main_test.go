package qstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Shared with package queue's tests.
var (
	redisNow       = testrig.RedisNow
	untilRedisTime = testrig.UntilRedisTime
	itemFields     = testrig.ItemFields
	enqueueAtOnce  = testrig.EnqueueAtOnce
)

// bundle is what most tests need: a throw-away Redis, a client and the
// store of a queue.
type bundle struct {
	srv *redistest.Server
	rdb *redis.Client
	q   *qstore.Store
}

// setup starts a Redis for the test and makes the store of a queue on it,
// made by queue.New (its defaults and checks), under a prefix unique to
// the test.
func setup(t *testing.T, cfg queue.Config) *bundle {
	t.Helper()
	srv := redistest.Start(t)
	b := &bundle{srv: srv, rdb: srv.Client(t)}
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	q, err := queue.New(b.rdb, "jobs", cfg)
	if err != nil {
		t.Fatalf("queue.New: %v", err)
	}
	b.q = qstore.Of(q)
	return b
}

// setupCounted is setup with a client that counts its round trips.
func setupCounted(t *testing.T, cfg queue.Config) (*bundle, *redistest.RoundTrips) {
	t.Helper()
	b := setup(t, cfg)
	rt := &redistest.RoundTrips{}
	b.rdb.AddHook(rt)
	return b, rt
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tagOf is the hash tag of a queue, as documented in package queue.
func tagOf(q *qstore.Store) string { return "{" + q.Config().Prefix + ":q:" + q.Name() + "}" }

func mustClaim(t testing.TB, q *qstore.Store, n, want int) []qstore.Item {
	t.Helper()
	items, err := q.Claim(context.Background(), n)
	if err != nil {
		t.Fatalf("Claim(%d): %v", n, err)
	}
	if len(items) != want {
		t.Fatalf("Claim(%d) got %d items, want %d: %+v", n, len(items), want, items)
	}
	return items
}

func mustDepth(t testing.TB, q *qstore.Store) qstore.Depth {
	t.Helper()
	s, err := q.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	return s
}

// wantCounts compares the counts of Depth (not OldestPending).
func wantCounts(t testing.TB, q *qstore.Store, want qstore.Depth) {
	t.Helper()
	got := mustDepth(t, q)
	got.OldestPending, want.OldestPending = 0, 0
	if got != want {
		t.Fatalf("Depth = %+v, want %+v", got, want)
	}
}

// purgeDead purges the dead letters, which must be n, and checks that
// their attempt limits went with them from the hash limits.
func purgeDead(t testing.TB, b *bundle, limits string, n int) {
	t.Helper()
	if got, err := b.q.PurgeDead(context.Background(), 10); got != n || err != nil {
		t.Fatalf("PurgeDead = %d, %v; want %d", got, err, n)
	}
	if left := itemFields(t, b.rdb, limits); left != 0 {
		t.Fatalf("limits hold %d items after the purge, want 0", left)
	}
}

// dueOf reads when a delayed item is due, by Redis's clock.
func dueOf(t testing.TB, b *bundle, id string) time.Time {
	t.Helper()
	due, err := b.rdb.ZScore(context.Background(), tagOf(b.q)+":delayed", id).Result()
	if err != nil {
		t.Fatalf("ZSCORE delayed %s: %v", id, err)
	}
	return time.UnixMilli(int64(due))
}

// promoteDue waits for a delayed item's due time and promotes it.
func promoteDue(t *testing.T, b *bundle, id string) {
	t.Helper()
	untilRedisTime(t, b.rdb, dueOf(t, b, id))
	if n, err := b.q.Promote(testContext(t), 10); n != 1 || err != nil {
		t.Fatalf("Promote when due = %d, %v; want 1", n, err)
	}
}

func mustEnqueueWith(t testing.TB, q *qstore.Store, payload string, opts qstore.EnqueueOptions, wantDuplicate bool) string {
	t.Helper()
	id, dup, err := q.EnqueueWith(context.Background(), []byte(payload), opts)
	if err != nil || id == "" || dup != wantDuplicate {
		t.Fatalf("EnqueueWith(%q, %+v) = %q, duplicate %v, %v; want duplicate %v", payload, opts, id, dup, err, wantDuplicate)
	}
	return id
}
