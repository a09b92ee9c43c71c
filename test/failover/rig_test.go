package failover_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// app is a small fleet of web servers, each with its own Redis client
// left at go-redis's defaults and a recruiter left at worksteal's: each
// enqueues continuously, answers cheap requests (304) through the
// net/http middleware, and drains and tidies one shared queue with the
// work it steals. It records what a failover must not break.
type app struct {
	queueName, drainName string
	servers              []*server

	mu       sync.Mutex
	acked    map[string]call // enqueue acknowledged → when it began and ended
	runs     map[string]int  // handler calls per id
	ackedRun map[string]bool // ids whose slice settled them (Run returned nil)
	again    int             // handler calls of an id whose ack was acknowledged
	slices   []sliceRun

	running, overlaps atomic.Int64 // drain slices at once, fleet-wide; starts that found one running
	enqueues          atomic.Int64 // calls made, for payloads
	enqueueFailed     atomic.Int64
	requests, failed  atomic.Int64
	stopOnce          sync.Once
	quit              chan struct{}
	loops             sync.WaitGroup
}

// server is one process of the fleet.
type server struct {
	rdb redis.UniversalClient
	q   *queue.Queue
	rec *recruiter.Recruiter
	web *httptest.Server
}

// call is when one acknowledged call began and ended.
type call struct{ began, ended time.Time }

// sliceRun is one drain slice, as the job saw it.
type sliceRun struct {
	began, ended time.Time
	items        int
	err          error
}

type sliceKey struct{}

// handledIDs collects the ids one slice handled.
type handledIDs struct{ ids []string }

func newApp(t *testing.T, prefix, queueName, drainName string, clients []redis.UniversalClient) *app {
	t.Helper()
	a := &app{queueName: queueName, drainName: drainName, acked: map[string]call{}, runs: map[string]int{},
		ackedRun: map[string]bool{}, quit: make(chan struct{})}
	for _, rdb := range clients {
		// Leases short and attempts many: an item whose ack was lost
		// comes back within seconds, none goes dead.
		q, err := queue.New(rdb, queueName, queue.Config{Prefix: prefix, Lease: 2 * time.Second, MaxAttempts: 1000,
			BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := recruiter.New(rdb, recruiter.Config{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		drain, err := jobs.Drain(q, a.handle, jobs.DrainConfig{Batching: jobs.Batching{Batch: 50, MaxBatches: 1, Name: drainName}})
		if err != nil {
			t.Fatal(err)
		}
		tidy, err := jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Name: "tidy-" + queueName}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Register(recruiter.Func(drainName, func(ctx context.Context) (recruiter.Report, error) {
			return a.slice(ctx, drain)
		}), recruiter.JobConfig{Rate: 0.8, Budget: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if err := rec.Register(tidy, recruiter.JobConfig{Rate: 0.2, Budget: 50 * time.Millisecond, Every: 250 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		web := httptest.NewServer(stealhttp.Middleware(rec)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNotModified) // a cheap answer: a fast exit
		})))
		a.servers = append(a.servers, &server{rdb: rdb, q: q, rec: rec, web: web})
	}
	t.Cleanup(func() { a.stop(t) })
	for _, s := range a.servers {
		a.loop(func() { a.enqueue(s.q) })
		a.loop(func() { a.request(s.web) })
	}
	return a
}

// loop runs step until stop.
func (a *app) loop(step func()) {
	a.loops.Add(1)
	go func() {
		defer a.loops.Done()
		for {
			select {
			case <-a.quit:
				return
			default:
				step()
			}
		}
	}()
}

func (a *app) enqueue(q *queue.Queue) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	id, err := q.Enqueue(ctx, fmt.Appendf(nil, "item-%d", a.enqueues.Add(1)))
	if err != nil {
		a.enqueueFailed.Add(1)
		time.Sleep(5 * time.Millisecond) // as an application would, rather than spin
		return
	}
	a.mu.Lock()
	a.acked[id] = call{began: began, ended: time.Now()}
	a.mu.Unlock()
}

func (a *app) request(web *httptest.Server) {
	time.Sleep(time.Millisecond)
	a.requests.Add(1)
	resp, err := web.Client().Get(web.URL)
	if err == nil {
		_ = resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusNotModified {
		a.failed.Add(1)
	}
}

// slice runs one drain slice and records it; one batch a slice, so a
// slice that returns no error has settled every item it handled.
func (a *app) slice(ctx context.Context, drain recruiter.Job) (recruiter.Report, error) {
	if a.running.Add(1) > 1 {
		a.overlaps.Add(1)
	}
	defer a.running.Add(-1)
	h := &handledIDs{}
	began := time.Now()
	report, err := drain.Run(context.WithValue(ctx, sliceKey{}, h))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slices = append(a.slices, sliceRun{began: began, ended: time.Now(), items: report.Items, err: err})
	if err == nil {
		for _, id := range h.ids {
			a.ackedRun[id] = true
		}
	}
	return report, err
}

func (a *app) handle(ctx context.Context, it queue.Item) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ackedRun[it.ID] {
		a.again++
	}
	a.runs[it.ID]++
	if h, ok := ctx.Value(sliceKey{}).(*handledIDs); ok {
		h.ids = append(h.ids, it.ID)
	}
	return append([]byte("done:"), it.Payload...), nil
}

// counts is what the app has seen so far.
func (a *app) counts() (acked, handled int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked), len(a.runs)
}

// firstEnqueueAfter is when the first enqueue that began after t was
// acknowledged.
func (a *app) firstEnqueueAfter(t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var first time.Time
	for _, c := range a.acked {
		if c.began.After(t) && (first.IsZero() || c.ended.Before(first)) {
			first = c.ended
		}
	}
	return first, !first.IsZero()
}

// firstSliceAfter is the first drain slice that began after t and ended
// with items done and no error.
func (a *app) firstSliceAfter(t time.Time) (sliceRun, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.slices {
		if s.began.After(t) && s.items > 0 && s.err == nil {
			return s, true
		}
	}
	return sliceRun{}, false
}

// pressured is how many drain slices the pressure gate has held back so
// far, fleet-wide: a loaded machine's delay, not a failover's.
func (a *app) pressured() uint64 {
	var n uint64
	for _, s := range a.servers {
		for _, js := range s.rec.Stats().Jobs {
			if js.Name == a.drainName {
				n += js.Pressured
			}
		}
	}
	return n
}

// stopLoops stops the enqueuers and the requests; the recruiters go on
// when drained enlists them.
func (a *app) stopLoops() {
	a.stopOnce.Do(func() { close(a.quit); a.loops.Wait() })
}

// drained enlists every recruiter until the queue is empty and every
// acknowledged item has run, but those Redis may have lost (check tells
// them apart).
func (a *app) drained(t *testing.T, within time.Duration, f *redistest.Failover) {
	t.Helper()
	a.stopLoops()
	testrig.Eventually(t, within, "every acknowledged enqueue run, but those Redis may have lost, and the queue empty", func() bool {
		for _, s := range a.servers {
			s.rec.Enlist(context.Background())
		}
		if a.missing(newLossWindow(f)) > 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		d, err := a.servers[0].q.Depth(ctx)
		return err == nil && d.Pending+d.Leased+d.Delayed == 0
	}, a.describe)
}

// missing counts the acknowledged enqueues never run, leaving out those
// that lost holds.
func (a *app) missing(lost lossWindow) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	missing := 0
	for id, c := range a.acked {
		if a.runs[id] == 0 && !lost.holds(c) {
			missing++
		}
	}
	return missing
}

// lossWindow is when an acknowledged write may be lost by Redis itself:
// within replicationLag of the kill, either side (the client's clock ran
// on while the dead master's last answers came in); and, when the
// Sentinels failed over twice, up to replicationLag after the second
// switch, as the first master promoted became a replica of the second and
// dropped what it had acknowledged. The zero window holds nothing.
type lossWindow struct{ from, to time.Time }

func newLossWindow(f *redistest.Failover) lossWindow {
	w := lossWindow{from: f.KilledAt.Add(-replicationLag), to: f.KilledAt.Add(replicationLag)}
	if sw := f.Switches(); len(sw) > 1 {
		w.to = sw[len(sw)-1].At.Add(replicationLag)
	}
	return w
}

func (w lossWindow) holds(c call) bool { return c.ended.After(w.from) && c.ended.Before(w.to) }

func (a *app) describe() string {
	var b strings.Builder
	acked, handled := a.counts()
	fmt.Fprintf(&b, "acked enqueues %d, items handled %d, never run %d\n", acked, handled, a.missing(lossWindow{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, err := a.servers[0].q.Depth(ctx)
	fmt.Fprintf(&b, "queue: %+v %v\n", d, err)
	for i, s := range a.servers {
		st := s.rec.Stats()
		fmt.Fprintf(&b, "server %d: breaker open %v\n", i, st.BreakerOpen)
		for _, js := range st.Jobs {
			fmt.Fprintf(&b, "  %+v\n", js)
		}
	}
	return b.String()
}

// replicationLag is how long before the kill an acknowledged enqueue may
// still be lost: Redis replicates after it answers, so the last writes
// acknowledged by a master that dies may never reach the replica that
// takes over (seen: acknowledged 2-3 ms before the kill, in about one
// Cluster run in ten). WAIT would close the window; the queue does not
// send it.
const replicationLag = 250 * time.Millisecond

// check asserts that every acknowledged enqueue has its result, but those
// acknowledged in window (it returns how many of them were lost), and that the queue holds nothing dead; it also returns
// the redeliveries: handler calls of an id run before.
func (a *app) check(t *testing.T, window lossWindow, killedAt time.Time) (redelivered, lagged int) {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	a.mu.Lock()
	ids := make([]string, 0, len(a.acked))
	for id := range a.acked {
		ids = append(ids, id)
	}
	acked := maps.Clone(a.acked)
	for _, n := range a.runs {
		redelivered += n - 1
	}
	a.mu.Unlock()
	slices.Sort(ids)
	lost := 0
	for _, id := range ids {
		got, err := a.servers[0].q.Result(ctx, id)
		if err == nil && strings.HasPrefix(string(got), "done:item-") {
			continue
		}
		if c := acked[id]; window.holds(c) {
			lagged++
			t.Logf("enqueue %s, acknowledged %v from the kill, lost by Redis: %q, %v", id, c.ended.Sub(killedAt), got, err)
			continue
		}
		if lost++; lost <= 5 {
			t.Errorf("result of acknowledged enqueue %s = %q, %v", id, got, err)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged enqueues lost", lost, len(ids))
	}
	dead, err := testrig.DeadLetters(ctx, a.servers[0].q, 10)
	if err != nil || len(dead) != 0 {
		t.Errorf("dead letters = %v, %v; want none", dead, err)
	}
	return redelivered, lagged
}

func (a *app) stop(t *testing.T) {
	a.stopLoops()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range a.servers {
		s.web.Close()
		if err := s.rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
}
