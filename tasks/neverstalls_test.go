package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// The tests of this file wire a service exactly as the README's "Tasks"
// section shows, and nothing more: a recruiter, a Mux with its handlers,
// mux.Job(q, jobs.DrainConfig{}) registered with an Every, and traffic.
// No jobs.PromoteDue, no jobs.TidyStale: the drain must maintain its
// queue itself ("Work never stalls" in DESIGN.md).

// fastExitsPerSecond is the traffic: a server's fast exits, each one
// enlistment.
const fastExitsPerSecond = 50

// readmeService is a queue named name on a Redis of the test's own, its
// client, and start, which wires the README's service on it (handlers
// registered by register) and starts the traffic. A test that must act
// on the queue before the service runs calls start later.
type readmeService struct {
	rdb    redis.UniversalClient
	q      *queue.Queue
	client *tasks.Client
}

func newReadmeService(t *testing.T, name string, cfg queue.Config) *readmeService {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	s := &readmeService{rdb: rdb, q: newQueue(t, rdb, name, cfg)}
	var err error
	if s.client, err = tasks.NewClient(s.q); err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return s
}

// key is the queue's Redis key of that name, as package queue documents.
func (s *readmeService) key(name string) string {
	return "{" + s.q.Config().Prefix + ":q:" + s.q.Name() + "}:" + name
}

// start registers the Mux's job on a new recruiter, Every every, and
// enlists it fastExitsPerSecond times a second until the test ends. The
// recruiter's config is the default but for its pressure gate, which is
// off: it reads this test binary's scheduler, which the parallel tests
// beside it keep busy, and would hold slices back for up to 10 s (a
// promise of the recruiter's, tested there), not the queue's.
func (s *readmeService) start(t *testing.T, every time.Duration, register func(*tasks.Mux)) {
	t.Helper()
	mux := tasks.NewMux()
	register(mux)
	job, err := mux.Job(s.q, jobs.DrainConfig{})
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	rec := readmeRecruiter(t, s)
	if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
		t.Fatal(err)
	}
	fastExits(t, rec)
}

// readmeRecruiter is a recruiter with the README's config (the prefix
// its queue's, as Register demands), shut down when the test ends.
func readmeRecruiter(t *testing.T, s *readmeService) *recruiter.Recruiter {
	t.Helper()
	rec, err := recruiter.New(s.rdb, recruiter.Config{Pressure: -1, Prefix: s.q.Config().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return rec
}

// fastExits enlists rec fastExitsPerSecond times a second, each time with
// a context that is already done, as a request's is once its response is
// sent (a background slice waits for it), until the test ends.
func fastExits(t *testing.T, rec *recruiter.Recruiter) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Second / fastExitsPerSecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				rec.Enlist(done)
			}
		}
	}()
	t.Cleanup(func() { close(quit); <-stopped })
}

// redisClock reads Redis's TIME, the clock of delays and leases.
func redisClock(t *testing.T, rdb redis.UniversalClient) time.Time {
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Errorf("TIME: %v", err) // Errorf: handlers call it too
	}
	return now
}

// waitResult waits, generously, for id's result and returns it.
func waitResult(t *testing.T, s *readmeService, id string) string {
	t.Helper()
	var res []byte
	testrig.Eventually(t, 20*time.Second, "the result of task "+id, func() bool {
		var err error
		res, err = s.q.Result(context.Background(), id)
		return err == nil
	}, func() string {
		d, _ := s.q.Depth(context.Background())
		return "queue: " + fmtDepth(d)
	})
	return string(res)
}

// Proves: a task whose handler fails once is retried after the queue's
// backoff and then succeeds, with the README's wiring alone (before the
// drain maintained its queue, the nacked task stayed delayed for good).
func TestReadmeWiringRetriesAFailedTask(t *testing.T) {
	t.Parallel()
	s := newReadmeService(t, "retried", queue.Config{BackoffBase: 50 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	var calls atomic.Int32
	s.start(t, time.Second, func(mux *tasks.Mux) {
		mustHandle(t, mux, "flaky", func(_ context.Context, a addArgs) (sum, error) {
			if calls.Add(1) == 1 {
				return sum{}, errors.New("the first attempt fails")
			}
			return add(context.Background(), a)
		})
	})
	id := mustEnqueue(t, s.client, "flaky", addArgs{A: 2, B: 3})
	if res := waitResult(t, s, id); res != `{"Sum":5,"Label":""}` {
		t.Fatalf("result %s, want the sum 5", res)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler called %d times, want 2 (a failure, then the retry)", n)
	}
}

// Proves: a task enqueued with tasks.Delay(d) runs when due, never before
// its due time by Redis's clock, and within 1 s after it, with the
// README's wiring alone (before, it stayed delayed for good). Every is
// 200ms: at 50 fast exits a second, ten enlistments a slot, the recruiter
// visits the job in nearly every slot, so the bound leaves about four
// slots of margin.
func TestReadmeWiringRunsADelayedTaskWhenDue(t *testing.T) {
	t.Parallel()
	const (
		delay = 2 * time.Second
		every = 200 * time.Millisecond
		late  = time.Second
	)
	s := newReadmeService(t, "delayed", queue.Config{})
	var mu sync.Mutex
	var ran []time.Time // Redis's clock in the handler
	s.start(t, every, func(mux *tasks.Mux) {
		mustHandle(t, mux, "later", func(_ context.Context, a addArgs) (sum, error) {
			now := redisClock(t, s.rdb)
			mu.Lock()
			ran = append(ran, now)
			mu.Unlock()
			return add(context.Background(), a)
		})
	})
	id := mustEnqueueWith(t, s.client, "later", addArgs{A: 1, B: 1}, tasks.Delay(delay))
	ms, err := s.rdb.ZScore(context.Background(), s.key("delayed"), id).Result()
	if err != nil {
		t.Fatalf("the task's due time: %v", err)
	}
	due := time.UnixMilli(int64(ms))
	if res := waitResult(t, s, id); res != `{"Sum":2,"Label":""}` {
		t.Fatalf("result %s, want the sum 2", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 {
		t.Fatalf("handler ran %d times, want once", len(ran))
	}
	// Claim promotes an item once TIME, rounded down to the ms, reaches
	// its due time; the handler reads TIME after that.
	if ran[0].Before(due) {
		t.Fatalf("ran at %v, %v before it was due", ran[0], due.Sub(ran[0]))
	}
	if after := ran[0].Sub(due); after > late {
		t.Fatalf("ran %v after it was due, want within %v", after, late)
	}
	t.Logf("ran %v after it was due", ran[0].Sub(due))
}

// Proves: tasks claimed by a worker that vanished (claimed, never
// settled) run again once their lease has ended, counting that attempt,
// with the README's wiring alone (before, they stayed leased for good),
// and the vanished worker's claims are no longer current.
func TestReadmeWiringRecoversAbandonedLeases(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	s := newReadmeService(t, "abandoned", queue.Config{Lease: lease})
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = mustEnqueue(t, s.client, "add", addArgs{A: i, B: 10})
	}
	ctx := testrig.Context(t, 30*time.Second)
	vanished, err := s.q.Claim(ctx, len(ids))
	if err != nil || len(vanished) != len(ids) {
		t.Fatalf("the vanishing worker's Claim = %d items, %v; want %d", len(vanished), err, len(ids))
	}
	var mu sync.Mutex
	var ran []time.Time // Redis's clock in the handler
	s.start(t, time.Second, func(mux *tasks.Mux) {
		mustHandle(t, mux, "add", func(ctx context.Context, a addArgs) (sum, error) {
			now := redisClock(t, s.rdb)
			mu.Lock()
			ran = append(ran, now)
			mu.Unlock()
			return add(ctx, a)
		})
	})
	for i, id := range ids {
		if res, want := waitResult(t, s, id), fmt.Sprintf(`{"Sum":%d,"Label":""}`, i+10); res != want {
			t.Fatalf("task %d: result %s, want %s", i, res, want)
		}
		// Stored as "expiry ms:token:result", the token "attempt-claim":
		// the expired lease counted as the first attempt.
		stored, err := s.rdb.HGet(ctx, s.key("results"), id).Result()
		if _, rest, _ := strings.Cut(stored, ":"); err != nil || !strings.HasPrefix(rest, "2-") {
			t.Fatalf("task %d: stored result %q, %v; want it acked at attempt 2", i, stored, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != len(ids) {
		t.Fatalf("handler ran %d times, want %d", len(ran), len(ids))
	}
	for _, at := range ran {
		if at.Before(vanished[0].Deadline) {
			t.Fatalf("a task ran at %v, before the vanished worker's lease ended at %v", at, vanished[0].Deadline)
		}
	}
	for _, it := range vanished {
		if err := s.q.Ack(ctx, it, nil); !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("the vanished worker's Ack of %s = %v, want ErrLeaseLost", it.ID, err)
		}
	}
}
