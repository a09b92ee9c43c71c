package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

func TestMain(m *testing.M) {
	// The SIGKILL test re-executes this binary as its worker process.
	if os.Getenv(chainWorkerEnv) != "" {
		os.Exit(runChainWorker())
	}
	// The Serve worker's signal tests start it as theirs.
	if os.Getenv(serveWorkerEnv) != "" {
		os.Exit(runServeWorker())
	}
	goleak.VerifyTestMain(m)
}

// fastRetries retries at once (1ms backoff) and dead-letters at the third
// attempt, so that failing tasks end quickly.
var fastRetries = queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 3}

// bundle is what most tests need: a Redis, a queue on it, a Mux, its job
// and a Client.
type bundle struct {
	rdb    redis.UniversalClient
	q      *queue.Queue
	mux    *tasks.Mux
	job    recruiter.Job
	client *tasks.Client
}

// setup makes a queue under a prefix unique to the test on rdb (a fresh
// Redis when nil), and a Mux, its job and a Client of it, all with opts.
func setup(t *testing.T, rdb redis.UniversalClient, cfg queue.Config, opts ...tasks.Option) *bundle {
	t.Helper()
	if rdb == nil {
		rdb = redistest.Start(t).Client(t)
	}
	b := &bundle{rdb: rdb, q: newQueue(t, rdb, "tasks", cfg), mux: tasks.NewMux(opts...)}
	var err error
	if b.job, err = b.mux.Job(b.q, jobs.DrainConfig{}); err != nil {
		t.Fatalf("Job: %v", err)
	}
	if b.client, err = tasks.NewClient(b.q, opts...); err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return b
}

func newQueue(t testing.TB, rdb redis.UniversalClient, name string, cfg queue.Config) *queue.Queue {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	q, err := queue.New(rdb, name, cfg)
	if err != nil {
		t.Fatalf("queue.New(%q): %v", name, err)
	}
	return q
}

// drive runs slices of the job until done holds; the job's claims bring
// the retries back.
func (b *bundle) drive(t *testing.T, what string, done func() bool) {
	t.Helper()
	testrig.Eventually(t, 20*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := b.job.Run(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Run: %v", b.job.Name(), err)
		}
		return done()
	}, func() string {
		d, _ := b.q.Depth(context.Background())
		return "queue: " + fmtDepth(d)
	})
}

func fmtDepth(d queue.Depth) string {
	d.OldestPending = 0
	return fmt.Sprintf("%+v", d)
}

// called is a Call run on its own goroutine, for a test that drives the
// job meanwhile.
type called[R any] struct {
	done   chan struct{}
	result R
	err    error
}

func goCall[A, R any](t *testing.T, c *tasks.Client, typ string, args A) *called[R] {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	cl := &called[R]{done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		cl.result, cl.err = tasks.Define[A, R](typ).Call(ctx, c, args)
	}()
	t.Cleanup(func() { <-cl.done })
	return cl
}

func (c *called[R]) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
