package tasks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// serveWorkerEnv makes the test binary a Mux.Serve worker process
// (TestMain), for the tests of a worker's signals.
const serveWorkerEnv = "WORKSTEAL_TASKS_SERVE_WORKER"

// serveWorkerSpec tells the Serve worker process where to work and log,
// how many handlers to run and how long each holds its task.
type serveWorkerSpec struct {
	processSpec
	Hold        time.Duration
	Concurrency int
}

// fleetTask is the type the Serve worker process handles.
const fleetTask = "fleet"

// fleetHandler logs "start ID ATTEMPT", holds the task for hold and logs
// "end ID".
func fleetHandler(log func(string), hold time.Duration) func(context.Context, int) (int, error) {
	return func(ctx context.Context, n int) (int, error) {
		info, _ := tasks.InfoFrom(ctx)
		log(fmt.Sprintf("start %s %d", info.ID, info.Attempt))
		time.Sleep(hold)
		log("end " + info.ID)
		return n, nil
	}
}

// runServeWorker is the Serve worker process: Mux.Serve until SIGTERM,
// then "served" in its log and exit 0 if Serve returned nil.
func runServeWorker() int {
	var spec serveWorkerSpec
	log, q, err := openTestProcess(serveWorkerEnv, &spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	mux := tasks.NewMux()
	if err := handle(mux, fleetTask, fleetHandler(log, spec.Hold)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := mux.Serve(ctx, q, tasks.WorkerConfig{Concurrency: spec.Concurrency}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log("served")
	return 0
}

func startServeWorker(t *testing.T, spec serveWorkerSpec) *exec.Cmd {
	return startTestProcess(t, serveWorkerEnv, spec)
}

// waitEmpty waits until q holds nothing: pending, leased, delayed or dead.
func waitEmpty(t *testing.T, q *queue.Queue, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	testrig.Eventually(t, within, "the queue empty", func() bool {
		d, err := q.Depth(ctx)
		return err == nil && emptyQueue(d)
	}, func() string { d, _ := q.Depth(ctx); return "queue: " + fmtDepth(d) })
}

// serveLog is a Serve worker's log: the attempt each task started at,
// the tasks that ended, and whether Serve returned.
type serveLog struct {
	started map[string]int // id → attempt
	ended   map[string]bool
	served  bool
}

func readServeLog(t *testing.T, path string) serveLog {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	l := serveLog{started: map[string]int{}, ended: map[string]bool{}}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "start":
			if _, again := l.started[f[1]]; again {
				t.Errorf("worker log: %s started twice", f[1])
			}
			l.started[f[1]], _ = strconv.Atoi(f[2])
		case len(f) == 2 && f[0] == "end":
			l.ended[f[1]] = true
		case line == "served":
			l.served = true
		}
	}
	return l
}

// leasedIDs are those of ids that q's leases hold (the leases' key holds
// an entry of its own too, which is no task).
func leasedIDs(t *testing.T, rdb redis.UniversalClient, q *queue.Queue, ids []string) map[string]bool {
	t.Helper()
	key := "{" + q.Config().Prefix + ":q:" + q.Name() + "}:leases"
	members, err := rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, m := range members {
		held[m] = true
	}
	leased := map[string]bool{}
	for _, id := range ids {
		if held[id] {
			leased[id] = true
		}
	}
	return leased
}

func emptyQueue(d queue.Depth) bool { return d.Pending+d.Leased+d.Delayed+d.Dead == 0 }

// TestServeWorkerSIGKILL: a Serve worker process SIGKILLed with its
// handlers busy and hundreds of tasks pending loses nothing; a second
// worker runs the rest, the killed worker's leases coming back as they
// expire. Every task runs, and is acked; one runs twice only if the kill
// found it leased (crash redelivery), and then at attempt 2.
func TestServeWorkerSIGKILL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const lease = time.Second
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: lease}
	b := setup(t, rdb, cfg)
	r := newRuns()
	mustHandle(t, b.mux, fleetTask, func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		time.Sleep(50 * time.Millisecond)
		return n, nil
	})
	ctx := testrig.Context(t, 2*time.Minute)
	const total = 800
	ids, err := enqueueMany(ctx, b.client, fleetTask, make([]int, total))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "worker.log")
	cmd := startServeWorker(t, serveWorkerSpec{processSpec: processSpec{Addr: srv.Addr(), Prefix: cfg.Prefix, Log: logPath, Lease: lease}, Hold: 50 * time.Millisecond, Concurrency: 32})
	testrig.Eventually(t, 30*time.Second, "the worker's first 200 tasks started", func() bool {
		return len(readServeLog(t, logPath).started) >= 200
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The killed worker's last calls, if Redis had them, are run by now.
	time.Sleep(100 * time.Millisecond)
	killed := readServeLog(t, logPath)
	leased := leasedIDs(t, rdb, b.q, ids)
	running := 0 // started, not ended: mid-handler at the kill
	for id := range killed.started {
		if !killed.ended[id] {
			running++
			if !leased[id] {
				t.Errorf("%s was running at the kill, but not leased", id)
			}
		}
	}
	if running == 0 || len(killed.started) >= total {
		t.Fatalf("the kill found %d handlers running, %d of %d tasks started; want it mid-run", running, len(killed.started), total)
	}

	stop := serve(t, b, tasks.WorkerConfig{Concurrency: 32})
	waitEmpty(t, b.q, 60*time.Second)
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	again := 0
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		_, first := killed.started[id]
		runs := r.byID[id]
		if first {
			runs++
		}
		switch {
		case runs == 0:
			t.Errorf("%s never ran: lost", id)
		case r.byID[id] > 1:
			t.Errorf("%s ran %d times in the second worker", id, r.byID[id])
		case runs > 1 && !leased[id]:
			t.Errorf("%s ran twice, but the kill did not find it leased: it was acked, and ran again", id)
		case runs > 1:
			again++
		}
		if res, err := b.q.Result(ctx, id); err != nil || res == nil {
			t.Errorf("%s: Result = %q, %v: not acked", id, res, err)
		}
	}
	// A crash uses an attempt: what the killed worker started comes back
	// at attempt 2, what it had claimed and not started too.
	if r.attempts[1]+r.attempts[2] != len(r.byID) || r.attempts[2] > len(leased) {
		t.Errorf("the second worker's runs by attempt %v; want attempt 2 for at most the %d leased at the kill", r.attempts, len(leased))
	}
	t.Logf("killed with %d handlers running, %d tasks started, %d leased; %d ran again, the second worker ran %d (by attempt %v)",
		running, len(killed.started), len(leased), again, len(r.byID), r.attempts)
}

// TestServeWorkerSIGTERM: SIGTERM to a Serve worker process (its context
// from signal.NotifyContext) with 200 tasks in flight and 1,000 pending.
// The 200 finish and are acked, no task starts after the signal, the
// process exits 0, and the 1,000 wait with their attempts unused: a
// second worker runs each once, at attempt 1.
func TestServeWorkerSIGTERM(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: 30 * time.Second}
	b := setup(t, rdb, cfg)
	r := newRuns()
	mustHandle(t, b.mux, fleetTask, func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		return n, nil
	})
	ctx := testrig.Context(t, 2*time.Minute)
	const inFlight, pending = 200, 1000
	ids, err := enqueueMany(ctx, b.client, fleetTask, make([]int, inFlight+pending))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "worker.log")
	const hold = 1500 * time.Millisecond
	cmd := startServeWorker(t, serveWorkerSpec{processSpec: processSpec{Addr: srv.Addr(), Prefix: cfg.Prefix, Log: logPath, Lease: cfg.Lease}, Hold: hold, Concurrency: inFlight})
	testrig.Eventually(t, 30*time.Second, "200 handlers running", func() bool {
		return len(readServeLog(t, logPath).started) >= inFlight
	})
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	atSignal := readServeLog(t, logPath)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the worker exited with %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit 30s after SIGTERM")
	}
	took := time.Since(signalled)
	done := readServeLog(t, logPath)
	if len(atSignal.ended) != 0 {
		t.Logf("%d tasks had ended before the signal: the test is weaker for it", len(atSignal.ended))
	}
	if !done.served || len(done.started) != inFlight || len(done.ended) != inFlight {
		t.Fatalf("the worker started %d tasks and ended %d (Serve returned: %v); want the %d started before the signal, each finished",
			len(done.started), len(done.ended), done.served, inFlight)
	}
	for id, attempt := range done.started {
		if attempt != 1 {
			t.Errorf("%s started at attempt %d, want 1", id, attempt)
		}
	}
	d, err := b.q.Depth(ctx)
	if err != nil || d.Leased != 0 || d.Pending != pending || d.Delayed+d.Dead != 0 {
		t.Fatalf("after the worker exited, Depth = %+v, %v: want the 200 acked and 1,000 pending", d, err)
	}

	serve(t, b, tasks.WorkerConfig{Concurrency: 200})
	testrig.Eventually(t, 30*time.Second, "the 1,000 ran", func() bool { n, _ := r.count(); return n >= pending })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		_, first := done.started[id]
		switch n := r.byID[id]; {
		case first && n > 0:
			t.Errorf("%s ran in the signalled worker and again in the second", id)
		case !first && n != 1:
			t.Errorf("%s ran %d times in the second worker, want once", id, n)
		}
	}
	if r.attempts[1] != pending {
		t.Errorf("the second worker's runs by attempt: %v; want all %d at attempt 1", r.attempts, pending)
	}
	t.Logf("the worker exited %v after SIGTERM (handlers hold %v)", took.Round(time.Millisecond), hold)
}

// fleetRuns is what a fleet's handlers saw: each task's runs, the runs by
// kind of process, and the most tasks of the limited type running at once.
type fleetRuns struct {
	mu             sync.Mutex
	byID           map[string]int
	order          []fleetRun // as they started
	byKind         map[string]int
	running, most  atomic.Int64
	limitedStarted atomic.Int64
}

func (f *fleetRuns) ran(ctx context.Context, kind string) {
	info, _ := tasks.InfoFrom(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byID[info.ID]++
	f.byKind[kind]++
	f.order = append(f.order, fleetRun{info.Priority, kind})
}

type fleetRun struct{ priority, kind string }

func (f *fleetRuns) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byID)
}

// fleetOfKinds is one Serve worker and three web processes that steal
// (each a recruiter enlisted by its traffic, its Mux's job registered),
// on one queue of one Redis, each process with its own connection.
// Handlers of "plain" and "limited" record their runs in f, and hold
// their tasks for hold; start starts the fleet.
type fleetOfKinds struct {
	client *tasks.Client
	q      *queue.Queue
	start  func()
}

func newFleetOfKinds(t *testing.T, f *fleetRuns, hold time.Duration) *fleetOfKinds {
	t.Helper()
	srv := redistest.Start(t)
	cfg := queue.Config{Prefix: redistest.Prefix(t)}
	register := func(mux *tasks.Mux, kind string) {
		mustHandle(t, mux, "plain", func(ctx context.Context, n int) (int, error) {
			f.ran(ctx, kind)
			time.Sleep(hold)
			return n, nil
		})
		mustHandle(t, mux, "limited", func(ctx context.Context, n int) (int, error) {
			now := f.running.Add(1)
			defer f.running.Add(-1)
			for m := f.most.Load(); now > m && !f.most.CompareAndSwap(m, now); m = f.most.Load() {
			}
			f.limitedStarted.Add(1)
			f.ran(ctx, kind)
			time.Sleep(hold)
			return n, nil
		})
	}
	q := newQueue(t, srv.Client(t), "tasks", cfg)
	fleet := &fleetOfKinds{q: q}
	var err error
	if fleet.client, err = tasks.NewClient(q); err != nil {
		t.Fatal(err)
	}
	fleet.start = func() {
		worker := tasks.NewMux()
		register(worker, "worker")
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- worker.Serve(ctx, q, tasks.WorkerConfig{Concurrency: 32}) }()
		t.Cleanup(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
		for range 3 {
			rdb := srv.Client(t)
			s := &readmeService{rdb: rdb, q: newQueue(t, rdb, "tasks", cfg)}
			s.start(t, 100*time.Millisecond, func(m *tasks.Mux) { register(m, "web") })
		}
	}
	return fleet
}

// TestServeWorkerBesideStealers: one Serve worker and three web
// processes that steal, on one queue: 2,000 tasks each run once (no crash,
// so no run twice), both kinds run some, and a limit of 3 running at once
// on a type holds across both kinds.
func TestServeWorkerBesideStealers(t *testing.T) {
	t.Parallel()
	f := &fleetRuns{byID: map[string]int{}, byKind: map[string]int{}}
	fleet := newFleetOfKinds(t, f, 10*time.Millisecond)
	ctx := testrig.Context(t, 2*time.Minute)
	const limit = 3
	if err := tasks.Define[int, int]("limited").SetLimit(ctx, fleet.client, tasks.Limit{Running: limit}); err != nil {
		t.Fatal(err)
	}
	fleet.start()
	// Enqueued in waves as the fleet runs, as traffic would.
	var ids []string
	for range 20 {
		plain, err := enqueueMany(ctx, fleet.client, "plain", make([]int, 80))
		if err != nil {
			t.Fatal(err)
		}
		limited, err := enqueueMany(ctx, fleet.client, "limited", make([]int, 20))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(append(ids, plain...), limited...)
		time.Sleep(50 * time.Millisecond)
	}
	testrig.Eventually(t, 90*time.Second, "the 2,000 tasks ran", func() bool { return f.count() >= len(ids) },
		func() string { d, _ := fleet.q.Depth(ctx); return "queue: " + fmtDepth(d) })
	waitEmpty(t, fleet.q, 10*time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		if n := f.byID[id]; n != 1 {
			t.Errorf("%s ran %d times, want once", id, n)
		}
	}
	if f.byKind["worker"] == 0 || f.byKind["web"] == 0 {
		t.Errorf("runs by kind of process %v: want some on each", f.byKind)
	}
	if most := f.most.Load(); most > limit || most < 2 {
		t.Errorf("at most %d limited tasks ran at once; want the limit %d to hold, and be reached", most, limit)
	}
	t.Logf("runs by kind %v; limited: %d at once at most (limit %d)", f.byKind, f.most.Load(), limit)
}

// TestServeWorkerPrioritiesBesideStealers: a backlog of three priorities
// (6:3:1), worked by a Serve worker and three web processes that steal:
// the first 300 tasks to start are 6:3:1 within 10 %, as with one drain
// (TestPriorityOneJobDrainsAllWeights).
func TestServeWorkerPrioritiesBesideStealers(t *testing.T) {
	t.Parallel()
	f := &fleetRuns{byID: map[string]int{}, byKind: map[string]int{}}
	// Slow enough that the worker alone takes a while to drain the
	// backlog: the web processes' slices get their share.
	fleet := newFleetOfKinds(t, f, 25*time.Millisecond)
	ctx := testrig.Context(t, 2*time.Minute)
	if err := fleet.q.SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1}); err != nil {
		t.Fatal(err)
	}
	for p, n := range map[string]int{"critical": 300, "default": 200, "low": 100} {
		opt := tasks.Priority(p)
		if p == "default" {
			opt = nil
		}
		if _, err := enqueueMany(ctx, fleet.client, "plain", make([]int, n), opt); err != nil {
			t.Fatal(err)
		}
	}
	fleet.start()
	testrig.Eventually(t, 60*time.Second, "the 600 tasks ran", func() bool { return f.count() >= 600 },
		func() string { d, _ := fleet.q.Depth(ctx); return "queue: " + fmtDepth(d) })
	f.mu.Lock()
	defer f.mu.Unlock()
	got, kinds := map[string]int{}, map[string]int{}
	for _, r := range f.order[:300] {
		got[r.priority]++
		kinds[r.kind]++
	}
	for p, want := range map[string]float64{"critical": 180, "default": 90, "low": 30} {
		if g := float64(got[p]); g < want*0.9 || g > want*1.1 {
			t.Errorf("%s: %d of the first 300 tasks, want %.0f ± 10 %%", p, got[p], want)
		}
	}
	if kinds["worker"] == 0 || kinds["web"] == 0 {
		t.Errorf("the first 300 by kind of process %v: want some on each", kinds)
	}
	t.Logf("the first 300 by priority %v, by kind %v; all runs by kind %v", got, kinds, f.byKind)
}

// logLines is a logger's text output, read while it is written.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{&l.mu, &l.buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// count is how many lines hold s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// TestServeWorkerRedisRestart: Redis killed, down a second, and started
// again empty under a running Serve: Serve goes on, logging WARN lines
// at a backed-off rate, and runs the tasks enqueued once Redis is back;
// it returns nil when its context ends.
func TestServeWorkerRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var logs logLines
	b := setup(t, srv.Client(t), queue.Config{}, tasks.WithLogger(logs.logger()))
	r := newRuns()
	mustHandle(t, b.mux, "work", func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		return n, nil
	})
	ctx := testrig.Context(t, time.Minute)
	stop := serve(t, b, tasks.WorkerConfig{})
	if _, err := enqueueMany(ctx, b.client, "work", make([]int, 20)); err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 10*time.Second, "20 tasks ran before the outage", func() bool { n, _ := r.count(); return n == 20 })

	const down = time.Second
	srv.Kill()
	time.Sleep(down)
	warned := logs.count("level=WARN")
	srv.Restart()
	if warned == 0 {
		t.Errorf("no WARN line while Redis was down for %v", down)
	}
	// Backing off from 5ms to 2s, a second down is at most ten failed
	// slices; a slice that waits for a dial or a timeout fails fewer.
	if warned > 15 {
		t.Errorf("%d WARN lines in %v of outage; want them backed off", warned, down)
	}
	testrig.Eventually(t, 30*time.Second, "an enqueue after the restart", func() bool {
		_, err := enqueueMany(ctx, b.client, "work", make([]int, 20))
		return err == nil
	})
	testrig.Eventually(t, 30*time.Second, "the 20 tasks enqueued after the restart ran", func() bool { n, _ := r.count(); return n == 40 })
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n, total := r.count(); n != 40 || total != 40 {
		t.Errorf("%d tasks ran %d times, want 40 once each", n, total)
	}
	t.Logf("%d WARN lines while Redis was down for %v, %d in all", warned, down, logs.count("level=WARN"))
}

// TestServeWorkerCanceledContext: Serve with a context already ended
// returns nil at once, and claims nothing.
func TestServeWorkerCanceledContext(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	var ran atomic.Int64
	mustHandle(t, b.mux, "work", func(ctx context.Context, n int) (int, error) { ran.Add(1); return n, nil })
	ctx := testrig.Context(t, 30*time.Second)
	if _, err := enqueueMany(ctx, b.client, "work", make([]int, 10)); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	if err := b.mux.Serve(ended, b.q, tasks.WorkerConfig{}); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Serve took %v to return on an ended context", took)
	}
	seq := "{" + b.q.Config().Prefix + ":q:" + b.q.Name() + "}:seq"
	if n, err := b.rdb.Exists(ctx, seq).Result(); err != nil || n != 0 {
		t.Errorf("the claims' counter exists (%d, %v): Serve claimed", n, err)
	}
	if d, err := b.q.Depth(ctx); err != nil || d.Pending != 10 || d.Leased != 0 || ran.Load() != 0 {
		t.Errorf("Depth = %+v, %v, %d runs: want the 10 pending, none run", d, err, ran.Load())
	}
}

// TestServeWorkerStoppedAtOnce: workers stopped again and again with a
// ShutdownTimeout of a nanosecond, shorter than any claim or handler,
// while tasks flow: each stop hands back what it cut, attempts unused
// (MaxAttempts 1: a used attempt would dead-letter a task), and every
// task is done once in the end.
func TestServeWorkerStoppedAtOnce(t *testing.T) {
	t.Parallel()
	var logs logLines
	b := setup(t, nil, queue.Config{Lease: 30 * time.Second, MaxAttempts: 1}, tasks.WithLogger(logs.logger()))
	var mu sync.Mutex
	done, stopped := map[string]int{}, 0
	mustHandle(t, b.mux, "work", func(ctx context.Context, n int) (int, error) {
		info, _ := tasks.InfoFrom(ctx)
		select {
		case <-ctx.Done():
			mu.Lock()
			stopped++
			mu.Unlock()
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		mu.Lock()
		done[info.ID]++
		mu.Unlock()
		return n, nil
	})
	ctx := testrig.Context(t, time.Minute)
	ids, err := enqueueMany(ctx, b.client, "work", make([]int, 1000))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		stop := serve(t, b, tasks.WorkerConfig{Concurrency: 32, ShutdownTimeout: time.Nanosecond})
		time.Sleep(time.Duration(i%5) * 10 * time.Millisecond) // from amid the first claim to amid handlers
		if err := stop(); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if d, err := b.q.Depth(ctx); err != nil || d.Leased != 0 || d.Dead != 0 {
			t.Fatalf("after stop %d, Depth = %+v, %v: want nothing leased, nothing dead", i, d, err)
		}
	}
	stop := serve(t, b, tasks.WorkerConfig{Concurrency: 32})
	waitEmpty(t, b.q, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if done[id] != 1 {
			t.Errorf("%s done %d times, want once", id, done[id])
		}
	}
	if n := logs.count("level=WARN") + logs.count("level=ERROR"); n > 0 {
		t.Errorf("%d lines above INFO: a stop is no failure", n)
	}
	t.Logf("20 stops cut %d handlers", stopped)
}

// TestServeWorkerHandlerIgnoresContext: a handler that never returns
// and ignores its context cannot hold a worker's shutdown past its
// deadline: Serve returns a few seconds after its ShutdownTimeout, with
// an error that says so (ErrWorkerStopped), and the stuck tasks come back
// when their leases expire, to a second worker.
func TestServeWorkerHandlerIgnoresContext(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	b := setup(t, nil, queue.Config{Lease: lease})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var stuck atomic.Bool
	stuck.Store(true)
	r := newRuns()
	mustHandle(t, b.mux, "stuck", func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		if stuck.Load() {
			<-release
		}
		return n, nil
	})
	ctx := testrig.Context(t, time.Minute)
	if _, err := enqueueMany(ctx, b.client, "stuck", make([]int, 3)); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	const shutdown = 200 * time.Millisecond
	go func() { served <- b.mux.Serve(sctx, b.q, tasks.WorkerConfig{ShutdownTimeout: shutdown}) }()
	testrig.Eventually(t, 10*time.Second, "3 handlers running", func() bool { n, _ := r.count(); return n == 3 })
	cancel()
	began := time.Now()
	select {
	case err := <-served:
		took := time.Since(began)
		if !errors.Is(err, tasks.ErrWorkerStopped) {
			t.Errorf("Serve = %v, want ErrWorkerStopped: its handlers are still running", err)
		}
		// Its deadline, then a grace of 2s and two Redis timeouts.
		if took < shutdown+2*time.Second || took > 10*time.Second {
			t.Errorf("Serve returned %v after its context ended; want its ShutdownTimeout and the grace", took)
		}
		t.Logf("Serve returned %v after its context ended: %v", took.Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30s after its context ended")
	}
	stuck.Store(false)
	stop := serve(t, b, tasks.WorkerConfig{})
	testrig.Eventually(t, 20*time.Second, "the stuck tasks ran again", func() bool { _, total := r.count(); return total == 6 })
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if r.attempts[2] != 3 {
		t.Errorf("runs by attempt %v; want the stuck 3 again at attempt 2 (their leases expired)", r.attempts)
	}
}

// TestServeWorkerStopsWhileRedisHangs: Serve's context ends while Redis
// hangs (SIGSTOP) with handlers running: Serve returns within a few
// Redis timeouts, nil, with a WARN line for the settle that failed, and
// once Redis answers again the tasks it could not settle come back when
// their leases expire, and run.
func TestServeWorkerStopsWhileRedisHangs(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var logs logLines
	b := setup(t, srv.Client(t), queue.Config{Lease: 2 * time.Second}, tasks.WithLogger(logs.logger()))
	r := newRuns()
	mustHandle(t, b.mux, "work", func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		time.Sleep(300 * time.Millisecond)
		return n, nil
	})
	ctx := testrig.Context(t, time.Minute)
	ids, err := enqueueMany(ctx, b.client, "work", make([]int, 40))
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.mux.Serve(sctx, b.q, tasks.WorkerConfig{Concurrency: 8}) }()
	testrig.Eventually(t, 10*time.Second, "8 handlers running", func() bool { n, _ := r.count(); return n >= 8 })
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	cancel()
	began := time.Now()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		t.Logf("Serve returned %v after its context ended, Redis hung", time.Since(began).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return 15s after its context ended, Redis hung")
	}
	srv.Resume()
	resumed = true
	stop := serve(t, b, tasks.WorkerConfig{Concurrency: 8})
	waitEmpty(t, b.q, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if r.byID[id] == 0 {
			t.Errorf("%s never ran: lost", id)
		}
	}
	if logs.count("failed at its shutdown") == 0 {
		t.Errorf("no WARN line for the settle that failed at the shutdown:\n%s", logs.text())
	}
	t.Logf("runs by attempt %v; %d WARN lines", r.attempts, logs.count("level=WARN"))
}
