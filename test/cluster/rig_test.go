package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// drainRig is a queue of n items and a recruiter that drains and tidies it,
// enlisted continuously by a goroutine standing in for request traffic.
type drainRig struct {
	q      *queue.Queue
	rec    *recruiter.Recruiter
	ids    []string
	values map[string]string // id → payload

	mu    sync.Mutex
	calls map[string]int // handler calls per id: more than 1 is a redelivery

	stopTraffic func()
	once        sync.Once
}

// Job names of the rig, fixed so that Stats can be read by name.
const (
	drainJob = "drain"
	tidyJob  = "tidy"
)

// startDrain enqueues n items on queue name and starts draining it. The
// lease is short and the attempts many, so that leases stranded by a fault
// come back soon through TidyStale and no item reaches the dead letters.
func startDrain(t *testing.T, rdb redis.UniversalClient, prefix, name string, n, batch int) *drainRig {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	q, err := queue.New(rdb, name, queue.Config{
		Prefix: prefix, Lease: time.Second, MaxAttempts: 100,
		BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &drainRig{q: q, values: map[string]string{}, calls: map[string]int{}}
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "item-%d", i)
	}
	if r.ids, err = q.EnqueueBatch(ctx, payloads); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	for i, id := range r.ids {
		r.values[id] = string(payloads[i])
	}

	r.rec, err = recruiter.New(rdb, recruiter.Config{
		Prefix:          prefix,
		MaxConcurrent:   2,
		BreakerCooldown: 100 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	drain, err := jobs.Drain(q, r.handle, jobs.DrainConfig{Batching: jobs.Batching{Batch: batch, Name: drainJob}})
	if err != nil {
		t.Fatal(err)
	}
	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Name: tidyJob}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rec.Register(drain, recruiter.JobConfig{Rate: 0.8, Budget: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := r.rec.Register(tidy, recruiter.JobConfig{Rate: 0.2, Budget: 50 * time.Millisecond, Every: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r.stopTraffic = testrig.Traffic(r.rec, time.Millisecond)
	t.Cleanup(func() { r.shutdown(t) })
	return r
}

// handle is the drain's handler: its result names the payload.
func (r *drainRig) handle(_ context.Context, it queue.Item) ([]byte, error) {
	r.mu.Lock()
	r.calls[it.ID]++
	r.mu.Unlock()
	return append([]byte("done:"), it.Payload...), nil
}

// handled is how many distinct items the handler has seen, and how many
// calls were redeliveries of an item seen before.
func (r *drainRig) handled() (distinct, again int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		distinct++
		again += c - 1
	}
	return distinct, again
}

func (r *drainRig) job(t *testing.T, name string) recruiter.JobStats {
	t.Helper()
	for _, js := range r.rec.Stats().Jobs {
		if js.Name == name {
			return js
		}
	}
	t.Fatalf("no stats for job %q", name)
	return recruiter.JobStats{}
}

// attempts counts the drain's slices that reached Redis past the lock,
// whatever their outcome.
func (r *drainRig) attempts(t *testing.T) uint64 { return r.job(t, drainJob).Slices }

// shutdown stops the traffic and waits for slices in flight.
func (r *drainRig) shutdown(t *testing.T) {
	r.once.Do(func() {
		r.stopTraffic()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// waitHandled waits until the handler has seen n distinct items.
func (r *drainRig) waitHandled(t *testing.T, within time.Duration, n int) {
	t.Helper()
	testrig.Eventually(t, within, fmt.Sprintf("%d items handled", n), func() bool {
		d, _ := r.handled()
		return d >= n
	}, r.describe)
}

// describe is the rig's state, for failure messages.
func (r *drainRig) describe() string {
	var b strings.Builder
	d, again := r.handled()
	fmt.Fprintf(&b, "handled %d of %d (%d again)\n", d, len(r.ids), again)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := r.q.Depth(ctx)
	fmt.Fprintf(&b, "queue: %+v %v\n", s, err)
	st := r.rec.Stats()
	fmt.Fprintf(&b, "breaker open: %v\n", st.BreakerOpen)
	for _, js := range st.Jobs {
		fmt.Fprintf(&b, "%+v\n", js)
	}
	for i, rc := range st.Recent {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "recent: %+v\n", rc)
	}
	return b.String()
}

// waitDrained waits until the handler has seen every item and the queue
// is empty: nothing pending, leased, delayed or dead.
func (r *drainRig) waitDrained(t *testing.T, within time.Duration) {
	t.Helper()
	testrig.Eventually(t, within, "every item handled and the queue empty", func() bool {
		if d, _ := r.handled(); d < len(r.ids) {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := r.q.Depth(ctx)
		return err == nil && s.Pending+s.Leased+s.Delayed+s.Dead == 0
	}, r.describe)
}

// checkResults asserts that every enqueued id has exactly its one result,
// and that the queue holds nothing else.
func (r *drainRig) checkResults(t *testing.T) {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	missing := 0
	for _, id := range r.ids {
		got, err := r.q.Result(ctx, id)
		if want := "done:" + r.values[id]; err != nil || string(got) != want {
			if missing++; missing <= 5 {
				t.Errorf("result of %s (%s) = %q, %v; want %q", id, r.values[id], got, err, want)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d items without their result: lost", missing, len(r.ids))
	}
	s, err := r.q.Depth(ctx)
	if err != nil || s != (queue.Depth{}) {
		t.Fatalf("queue stats at the end = %+v, %v; want all zero", s, err)
	}
	dead, err := testrig.DeadLetters(ctx, r.q, 10)
	if err != nil || len(dead) != 0 {
		t.Fatalf("dead letters = %v, %v; want none", dead, err)
	}
}

// redirects counts the cluster errors that node clients receive, before
// the ClusterClient follows them: add it with cc.OnNewNode before the
// first command.
type redirects struct{ moved, ask, tryAgain, clusterDown atomic.Int64 }

func (h *redirects) attach(node *redis.Client) { node.AddHook(h) }

func (h *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd.Err())
		return err
	}
}

func (h *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd.Err())
		}
		return err
	}
}

func (h *redirects) count(err error) {
	if err == nil {
		return
	}
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "MOVED "):
		h.moved.Add(1)
	case strings.HasPrefix(msg, "ASK "):
		h.ask.Add(1)
	case strings.HasPrefix(msg, "TRYAGAIN"):
		h.tryAgain.Add(1)
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		h.clusterDown.Add(1)
	}
}

func (h *redirects) String() string {
	return fmt.Sprintf("MOVED %d, ASK %d, TRYAGAIN %d, CLUSTERDOWN %d",
		h.moved.Load(), h.ask.Load(), h.tryAgain.Load(), h.clusterDown.Load())
}

// eventually polls cond until it holds, failing the test after within.
