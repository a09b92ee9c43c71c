package jobs_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bundle is what most tests need: a throw-away Redis, a client and a queue.
type bundle struct {
	srv *redistest.Server
	rdb *redis.Client
	q   *queue.Queue
}

// setup starts a Redis for the test and makes a queue "jobs" on it.
func setup(t *testing.T, cfg queue.Config) *bundle {
	t.Helper()
	srv := redistest.Start(t)
	b := &bundle{srv: srv, rdb: srv.Client(t)}
	b.q = newQueue(t, b.rdb, "jobs", cfg)
	return b
}

// redisClient starts a Redis for the test and returns a client of it.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	return redistest.Start(t).Client(t)
}

// newQueue makes a queue under a prefix unique to the test (so tests may
// share a REDIS_URL instance).
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

// testPrefix is a valid key prefix unique to the test.
func testPrefix(t testing.TB) string { return redistest.Prefix(t) }

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runSlice runs one slice of job with the given budget, as the recruiter
// would, and returns its report and how long it took.
func runSlice(t testing.TB, job recruiter.Job, budget time.Duration) (recruiter.Report, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	began := time.Now()
	rep, err := job.Run(ctx)
	return rep, time.Since(began), err
}

// mustSlice is runSlice for slices that must not fail.
func mustSlice(t testing.TB, job recruiter.Job, budget time.Duration) recruiter.Report {
	t.Helper()
	rep, _, err := runSlice(t, job, budget)
	if err != nil {
		t.Fatalf("%s: Run: %v", job.Name(), err)
	}
	return rep
}

func wantReport(t testing.TB, got, want recruiter.Report, what string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: Report = %+v, want %+v", what, got, want)
	}
}

// redisNow reads Redis's clock, the one leases, delays and expiries use.
func redisNow(t testing.TB, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// untilRedisTime polls Redis's clock until it passes tm.
func untilRedisTime(t testing.TB, rdb redis.UniversalClient, tm time.Time) {
	t.Helper()
	testrig.Eventually(t, 10*time.Second, "Redis time past "+tm.String(), func() bool {
		return redisNow(t, rdb).After(tm)
	})
}

// enqueue adds items whose payloads are prefix0, prefix1, ... and returns
// their ids in order.
func enqueue(t testing.TB, q *queue.Queue, prefix string, n int) []string {
	t.Helper()
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte(prefix + strconv.Itoa(i))
	}
	ids, err := q.EnqueueBatch(context.Background(), payloads)
	if err != nil || len(ids) != n {
		t.Fatalf("EnqueueBatch(%d): %d ids, %v", n, len(ids), err)
	}
	return ids
}

func mustClaim(t testing.TB, q *queue.Queue, n, want int) []queue.Item {
	t.Helper()
	items, err := q.Claim(context.Background(), n)
	if err != nil || len(items) != want {
		t.Fatalf("Claim(%d) = %d items, %v; want %d", n, len(items), err, want)
	}
	return items
}

func mustDepth(t testing.TB, q *queue.Queue) queue.Depth {
	t.Helper()
	s, err := q.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	s.OldestPending = 0 // not compared
	return s
}

func wantDepth(t testing.TB, q *queue.Queue, want queue.Depth) {
	t.Helper()
	if got := mustDepth(t, q); got != want {
		t.Fatalf("Depth = %+v, want %+v", got, want)
	}
}

// calls counts a handler's calls per item id, safely from any goroutine.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
}

func (c *calls) of(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.n {
		n += k
	}
	return n
}
