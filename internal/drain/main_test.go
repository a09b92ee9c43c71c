package drain

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newQueue starts a Redis for the test and makes a queue on it, under a
// prefix unique to the test.
func newQueue(t testing.TB, name string, cfg queue.Config) *queue.Queue {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	q, err := queue.New(redistest.Start(t).Client(t), name, cfg)
	if err != nil {
		t.Fatalf("queue.New(%q): %v", name, err)
	}
	return q
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

// runSlice runs one slice of job with the given budget, as the recruiter
// would.
func runSlice(job *drainJob, budget time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	rep, err := job.Run(ctx)
	return rep.Items, err
}

// calls counts a handler's calls per item id, safely from any goroutine.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

// echo answers it with "done:" + its payload, counting the call.
func (c *calls) echo(it qstore.Item) ([]byte, *qstore.FollowUp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[it.ID]++
	return append([]byte("done:"), it.Payload...), nil, nil
}

// wantResults checks that every item i of ids has the result "done:" +
// prefix + i, and was handled exactly once.
func wantResults(t testing.TB, q *queue.Queue, c *calls, prefix string, ids []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range ids {
		r, err := q.Result(context.Background(), id)
		if want := "done:" + prefix + strconv.Itoa(i); string(r) != want || err != nil {
			t.Fatalf("Result(item %d) = %q, %v; want %q", i, r, err, want)
		}
		if n := c.n[id]; n != 1 {
			t.Fatalf("item %d handled %d times, want once", i, n)
		}
	}
}
