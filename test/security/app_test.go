package security_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// app is one application's use of worksteal: a queue drained by a
// recruiter with the four built-in jobs on a queue and an expiring hash,
// enlisted continuously as a busy web server's fast exits would.
type app struct {
	prefix string
	q      *queue.Queue
	hash   *exphash.Hash
	rec    *recruiter.Recruiter
	ids    []string

	mu      sync.Mutex
	results map[string]int // handler calls per id

	stopTraffic func()
	once        sync.Once
}

// appConfig says what an app is called and where its keys go.
type appConfig struct {
	prefix   string // recruiter and queue prefix
	queue    string // queue name
	hashKey  string // expiring hash key
	jobNames string // suffix of every job name: equal suffixes give apps the same job names
	items    int
	extra    recruiter.Job // an extra job, registered at the rest of the rate
}

// startApp enqueues cfg.items items (every tenth fails its first attempt,
// so that there are retries to promote), strands three in leases that
// expire (a crashed worker), sets six hash fields that
// expire at once (for EvictExpired) and starts enlisting.
func startApp(t *testing.T, rdb redis.UniversalClient, cfg appConfig) *app {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	a := &app{prefix: cfg.prefix, results: map[string]int{}}
	var err error
	a.q, err = queue.New(rdb, cfg.queue, queue.Config{
		Prefix: cfg.prefix, Lease: 300 * time.Millisecond,
		BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, cfg.items)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "%s-%d", cfg.prefix, i)
	}
	if a.ids, err = a.q.EnqueueBatch(ctx, payloads); err != nil {
		t.Fatalf("%s: enqueue: %v", cfg.prefix, err)
	}
	if stranded, err := a.q.Claim(ctx, 3); err != nil || len(stranded) != 3 {
		t.Fatalf("%s: claim 3 to strand = %d, %v", cfg.prefix, len(stranded), err)
	}
	if a.hash, err = exphash.New(rdb, cfg.hashKey); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := a.hash.Set(ctx, fmt.Sprint("session-", i), []byte("x"), time.Millisecond); err != nil {
			t.Fatalf("%s: hash set: %v", cfg.prefix, err)
		}
	}

	a.rec, err = recruiter.New(rdb, recruiter.Config{
		Prefix: cfg.prefix, MaxConcurrent: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	handler := func(_ context.Context, it queue.Item) ([]byte, error) {
		a.mu.Lock()
		a.results[it.ID]++
		a.mu.Unlock()
		if it.Attempt == 1 && strings.HasSuffix(string(it.Payload), "0") {
			return nil, fmt.Errorf("first attempt of %s fails", it.Payload)
		}
		return append([]byte("done:"), it.Payload...), nil
	}
	must := func(j recruiter.Job, err error) recruiter.Job {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	sfx := cfg.jobNames
	register := []struct {
		job recruiter.Job
		cfg recruiter.JobConfig
	}{
		{must(jobs.Drain(a.q, handler, jobs.DrainConfig{Batching: jobs.Batching{Batch: 50, Name: "drain" + sfx}})), recruiter.JobConfig{Rate: 0.3}},
		{must(jobs.TidyStale(a.q, jobs.TidyConfig{Batching: jobs.Batching{Name: "tidy" + sfx}})), recruiter.JobConfig{Rate: 0.15, Every: 50 * time.Millisecond}},
		{must(jobs.PromoteDue(a.q, jobs.PromoteConfig{Batching: jobs.Batching{Name: "promote" + sfx}})), recruiter.JobConfig{Rate: 0.15, Every: 20 * time.Millisecond}},
		{must(jobs.EvictExpired(a.hash, jobs.EvictConfig{Batching: jobs.Batching{Name: "evict" + sfx}})), recruiter.JobConfig{Rate: 0.15, Every: 50 * time.Millisecond}},
	}
	if cfg.extra != nil {
		register = append(register, struct {
			job recruiter.Job
			cfg recruiter.JobConfig
		}{cfg.extra, recruiter.JobConfig{Rate: 0.25}})
	}
	for _, r := range register {
		if err := a.rec.Register(r.job, r.cfg); err != nil {
			t.Fatal(err)
		}
	}
	a.stopTraffic = testrig.Traffic(a.rec, time.Millisecond)
	t.Cleanup(func() { a.shutdown(t) })
	return a
}

func (a *app) shutdown(t *testing.T) {
	a.once.Do(func() {
		a.stopTraffic()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.rec.Shutdown(ctx); err != nil {
			t.Errorf("%s: Shutdown: %v", a.prefix, err)
		}
	})
}

func (a *app) job(name string) recruiter.JobStats {
	for _, js := range a.rec.Stats().Jobs {
		if js.Name == name {
			return js
		}
	}
	return recruiter.JobStats{}
}

// done reports whether every job has done its part: the queue is empty
// (the drain's claims brought the stranded leases and the retries back
// themselves, so TidyStale and PromoteDue often find nothing: that their
// scripts ran under the ACL is what counts), and the expired hash fields
// were evicted.
func (a *app) done(ctx context.Context, sfx string) bool {
	if a.job("tidy"+sfx).Slices == 0 || a.job("promote"+sfx).Slices == 0 || a.job("evict"+sfx).Items < 6 {
		return false
	}
	s, err := a.q.Depth(ctx)
	return err == nil && s == (queue.Depth{})
}

// checkResults asserts that every item has its result, read by the app's
// own client.
func (a *app) checkResults(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, id := range a.ids {
		v, err := a.q.Value(ctx, id)
		if err == nil {
			t.Fatalf("%s: value of acked %s still there: %q", a.prefix, id, v)
		}
		got, err := a.q.Result(ctx, id)
		if err != nil || !strings.HasPrefix(string(got), "done:"+a.prefix+"-") {
			t.Fatalf("%s: result of %s = %q, %v", a.prefix, id, got, err)
		}
	}
}

// describe is the app's state, for failure messages.
func (a *app) describe() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := a.q.Depth(ctx)
	fmt.Fprintf(&b, "%s queue: %+v %v\n", a.prefix, s, err)
	for _, js := range a.rec.Stats().Jobs {
		fmt.Fprintf(&b, "%+v\n", js)
	}
	return b.String()
}
