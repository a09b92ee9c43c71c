package queue_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

func TestMain(m *testing.M) {
	// The crash test re-executes this binary as its worker processes.
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	goleak.VerifyTestMain(m)
}

// Shared with package qstore's tests.
var (
	redisNow       = testrig.RedisNow
	untilRedisTime = testrig.UntilRedisTime
	itemFields     = testrig.ItemFields
	enqueueAtOnce  = testrig.EnqueueAtOnce
)

// bundle is what most tests need: a throw-away Redis, a client and a queue.
type bundle struct {
	srv *redistest.Server
	rdb *redis.Client
	q   *queue.Queue
}

// setup starts a Redis for the test and makes a queue on it, under a prefix
// unique to the test (so tests may also share a REDIS_URL instance).
func setup(t *testing.T, cfg queue.Config) *bundle {
	t.Helper()
	srv := redistest.Start(t)
	b := &bundle{srv: srv, rdb: srv.Client(t)}
	b.q = newQueue(t, b.rdb, "jobs", cfg)
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

func newQueue(t testing.TB, rdb redis.UniversalClient, name string, cfg queue.Config) *queue.Queue {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = testPrefix(t)
	}
	q, err := queue.New(rdb, name, cfg)
	if err != nil {
		t.Fatalf("queue.New(%q): %v", name, err)
	}
	return q
}

// withJitter is cfg with the retry jitter set to jitter.
func withJitter(cfg queue.Config, jitter func() float64) queue.Config {
	seams.SetJitter(&cfg, jitter)
	return cfg
}

// testPrefix is a valid key prefix unique to the test.
func testPrefix(t testing.TB) string { return redistest.Prefix(t) }

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tagOf is the hash tag of a queue, as documented in the package doc.
func tagOf(q *queue.Queue) string { return "{" + q.Config().Prefix + ":q:" + q.Name() + "}" }

func mustEnqueue(t testing.TB, q *queue.Queue, payloads ...string) []string {
	t.Helper()
	bs := make([][]byte, len(payloads))
	for i, p := range payloads {
		bs[i] = []byte(p)
	}
	ids, err := q.EnqueueBatch(context.Background(), bs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	if len(ids) != len(payloads) {
		t.Fatalf("EnqueueBatch returned %d ids for %d payloads", len(ids), len(payloads))
	}
	return ids
}

func mustClaim(t testing.TB, q *queue.Queue, n, want int) []queue.Item {
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

func mustDepth(t testing.TB, q *queue.Queue) queue.Depth {
	t.Helper()
	s, err := q.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	return s
}

// wantCounts compares the counts of Depth (not OldestPending).
func wantCounts(t testing.TB, q *queue.Queue, want queue.Depth) {
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
	if got, err := qstore.Of(b.q).PurgeDead(context.Background(), 10); got != n || err != nil {
		t.Fatalf("PurgeDead = %d, %v; want %d", got, err, n)
	}
	if left := itemFields(t, b.rdb, limits); left != 0 {
		t.Fatalf("limits hold %d items after the purge, want 0", left)
	}
}

func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}
