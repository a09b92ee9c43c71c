package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The peer benchmark (`-peers`, `make bench-peers`): worksteal, asynq and
// River on the same tasks, on servers this program starts (redis-server
// for worksteal and asynq, PostgreSQL for River), in interleaved rounds.

// peerArgs is every system's task: its number, which counts it, and when
// its enqueue began, for the enqueue → start latency.
type peerArgs struct {
	ID int64 `json:"id"`
	At int64 `json:"at"` // Unix ns
}

// peerHandler is the benchmark's side of a task; each system's handler
// decodes its task and calls it.
type peerHandler func(ctx context.Context, a peerArgs)

// errUnsupported marks what a system does not offer (a batch enqueue, a
// call that waits for the result).
var errUnsupported = errors.New("not offered")

// peerRun says how a system works its tasks in one run.
type peerRun struct {
	workers  int           // handlers at once
	defaults bool          // the system's defaults (workers is then ignored)
	wait     time.Duration // what each task waits
}

// peerSystem is one job system under test.
type peerSystem interface {
	name() string
	// reset empties the system's store, so every run starts alike.
	reset(ctx context.Context) error
	enqueue(ctx context.Context, a peerArgs) error
	enqueueBatch(ctx context.Context, as []peerArgs) error
	// call enqueues a task and waits for its result.
	call(ctx context.Context, a peerArgs) error
	// waiting is the tasks enqueued and not started; left, those not
	// finished (pending, running, to be retried, dead).
	waiting(ctx context.Context) (int64, error)
	left(ctx context.Context) (int64, error)
	// start works the queue until stop.
	start(ctx context.Context, r peerRun, h peerHandler) (stop func() error, err error)
	close()
}

type expKind int

const (
	expEnqueue expKind = iota
	expProcess
	expLatency
	expCall
)

// peerExp is one experiment; each round runs it once per system.
type peerExp struct {
	key, label string
	kind       expKind
	goroutines int  // enqueue: goroutines at once
	batched    bool // enqueue: the system's batch call, 1,000 a call
	run        peerRun
}

var peerExps = []peerExp{
	{key: "enqueue-1", label: "enqueue, 1 goroutine", kind: expEnqueue, goroutines: 1},
	{key: "enqueue-8", label: "enqueue, 8 goroutines", kind: expEnqueue, goroutines: 8},
	{key: "enqueue-batch", label: "enqueue, batches of 1,000", kind: expEnqueue, goroutines: 1, batched: true},
	{key: "noop-1", label: "process no-op tasks, 1 worker", kind: expProcess, run: peerRun{workers: 1}},
	{key: "noop-8", label: "process no-op tasks, 8 workers", kind: expProcess, run: peerRun{workers: 8}},
	{key: "wait-8", label: "process tasks that wait 50 ms, 8 workers", kind: expProcess, run: peerRun{workers: 8, wait: 50 * time.Millisecond}},
	{key: "noop-32", label: "process no-op tasks, 32 workers", kind: expProcess, run: peerRun{workers: 32}},
	{key: "wait-32", label: "process tasks that wait 50 ms, 32 workers", kind: expProcess, run: peerRun{workers: 32, wait: 50 * time.Millisecond}},
	{key: "latency", label: "enqueue → start at 500/s, defaults", kind: expLatency, run: peerRun{defaults: true}},
	{key: "latency-worker", label: "enqueue → start at 500/s, a dedicated worker of 8", kind: expLatency, run: peerRun{workers: 8}},
	{key: "call", label: "Call (enqueue and wait for the result) at 500/s, defaults", kind: expCall, run: peerRun{defaults: true}},
}

// selectPeerExps is the experiments of keys, in peerExps' order; all of
// them for none.
func selectPeerExps(keys map[string]bool) ([]peerExp, error) {
	if len(keys) == 0 {
		return peerExps, nil
	}
	var xs []peerExp
	for _, x := range peerExps {
		if keys[x.key] {
			xs = append(xs, x)
		}
	}
	if len(xs) < len(keys) {
		known := make([]string, len(peerExps))
		for i, x := range peerExps {
			known[i] = x.key
		}
		return nil, fmt.Errorf("-peer-exps: an experiment of %v is unknown; they are %s", slices.Sorted(maps.Keys(keys)), strings.Join(known, ","))
	}
	return xs, nil
}

// peerRate is the open-loop rate of the latency and call experiments.
const peerRate = 500

// wsFastExits is the fast exits per second of worksteal's process in the
// latency and call experiments.
const wsFastExits = 100

// peerPlan sizes a run: rounds, tasks per run per experiment and system
// (each run a second or few), and the latency runs' warm-up and window.
type peerPlan struct {
	rounds         int
	scale          float64
	warmup, window time.Duration
}

func peerPlanFor(quick, long bool) peerPlan {
	switch {
	case quick:
		return peerPlan{rounds: 1, scale: 0.2, warmup: time.Second, window: 2 * time.Second}
	case long:
		return peerPlan{rounds: 5, scale: 4, warmup: 3 * time.Second, window: 20 * time.Second}
	}
	return peerPlan{rounds: 3, scale: 1, warmup: 2 * time.Second, window: 5 * time.Second}
}

// size is how many tasks a run of e on system sys handles: about a second
// or more of each system's work, so that start and stop weigh little.
func (p peerPlan) size(e peerExp, sys string) int {
	base := map[string]map[string]int{
		"enqueue-1":     {"worksteal": 20_000, "asynq": 20_000, "River": 3_000},
		"enqueue-8":     {"worksteal": 40_000, "asynq": 40_000, "River": 8_000},
		"enqueue-batch": {"worksteal": 200_000, "River": 200_000},
		"noop-1":        {"worksteal": 200_000, "asynq": 20_000, "River": 2_000},
		"noop-8":        {"worksteal": 200_000, "asynq": 20_000, "River": 8_000},
		"wait-8":        {"worksteal": 400, "asynq": 400, "River": 400},
		"noop-32":       {"worksteal": 200_000, "asynq": 20_000, "River": 8_000},
		"wait-32":       {"worksteal": 2_000, "asynq": 2_000, "River": 2_000},
	}[e.key][sys]
	return max(int(float64(base)*p.scale), 1)
}

// peerResult is one run of one experiment on one system.
type peerResult struct {
	rate          float64    // tasks per second (enqueue, processing)
	hist          *histogram // latencies (latency, call)
	n             int64      // tasks
	dups, missing int64      // tasks run more than once, or never
	left          int64      // tasks the store still had after the run
	errors        int64
}

// exact says whether every task was counted exactly once.
func (r peerResult) exact() bool {
	return r.dups == 0 && r.missing == 0 && r.left == 0 && r.errors == 0
}

// tracker counts each task's runs by its number.
type tracker struct {
	seen        []atomic.Int32
	unique      atomic.Int64
	last        atomic.Int64 // Unix ns of the latest first run's end
	wait        time.Duration
	measureFrom int64 // latencies of tasks enqueued from then on (Unix ns)
	hist        *histogram
}

func newTracker(n int, wait time.Duration) *tracker {
	return &tracker{seen: make([]atomic.Int32, n), wait: wait}
}

func (t *tracker) handle(ctx context.Context, a peerArgs) {
	began := time.Now()
	if t.wait > 0 {
		_ = sleepCtx(ctx, t.wait)
	}
	if a.ID < 0 || a.ID >= int64(len(t.seen)) {
		return // not one of ours: shows as missing ones
	}
	if t.seen[a.ID].Add(1) != 1 {
		return
	}
	if t.hist != nil && a.At >= t.measureFrom {
		t.hist.record(began.Sub(time.Unix(0, a.At)))
	}
	t.last.Store(time.Now().UnixNano())
	t.unique.Add(1)
}

// await waits until n tasks have run, or timeout.
func (t *tracker) await(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for t.unique.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d tasks ran within %v", t.unique.Load(), n, timeout)
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// tally counts, over the first n numbers, the tasks run more than once and
// those never run.
func (t *tracker) tally(n int64) (dups, missing int64) {
	for i := range n {
		switch c := t.seen[i].Load(); {
		case c == 0:
			missing++
		case c > 1:
			dups += int64(c - 1)
		}
	}
	return dups, missing
}

// runPeerBench is the peer benchmark: servers up, rounds, report.
func runPeerBench(ctx context.Context, o options) (err error) {
	began, loadBefore := time.Now(), loadAverage()
	plan := peerPlanFor(o.quick, o.long)
	exps, err := selectPeerExps(o.peerExps)
	if err != nil {
		return err
	}
	e, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(e.dir) }()
	pg, err := startPostgres(ctx)
	if err != nil {
		return err
	}
	defer pg.stop()
	logf("peers: redis-server %s on %s, PostgreSQL %s on port %d (as %s)", e.redisVersion, e.addr, pg.version, pg.port, pgRunAs())

	ws, err := newWSPeer(e.addr, wsConfig{fastExits: wsFastExits})
	if err != nil {
		return err
	}
	defer ws.close()
	wsQuiet, err := newWSPeer(e.addr, wsConfig{})
	if err != nil {
		return err
	}
	defer wsQuiet.close()
	wsRemote, err := newWSPeer(e.addr, wsConfig{fastExits: wsFastExits, remote: true})
	if err != nil {
		return err
	}
	defer wsRemote.close()
	aq := newAsynqPeer(e.addr)
	defer aq.close()
	rv, err := newRiverPeer(ctx, pg.dsn())
	if err != nil {
		return fmt.Errorf("river: %w", err)
	}
	defer rv.close()

	res := peerResults{}
	for round := range plan.rounds {
		for _, x := range exps {
			for _, s := range peerSystemsOf(x, ws, wsQuiet, wsRemote, aq, rv) {
				r, err := runPeerOnce(ctx, plan, x, s)
				if err != nil {
					if errors.Is(err, errUnsupported) {
						continue
					}
					return fmt.Errorf("%s, %s, round %d: %w", x.label, peerLabel(x, s), round+1, err)
				}
				res.add(x.key, peerLabel(x, s), r)
				logf("peers: round %d/%d, %s, %s: %s", round+1, plan.rounds, x.label, peerLabel(x, s), r.summary(x))
			}
		}
	}
	machine := fmt.Sprintf("%s, PostgreSQL %s on loopback (fsync off); load average (1 min) %s when the run began, %s when it ended",
		describeMachine(e.redisVersion), pg.version, loadBefore, loadAverage())
	section := peersMarkdown(o, exps, plan, machine, time.Since(began), res)
	if len(o.peerExps) > 0 {
		// Some rows only: they would replace the whole section and its plots.
		fmt.Print(section)
		return nil
	}
	return writeSection(o, peersMarks, section, peerCharts(res))
}

func pgRunAs() string {
	if os.Geteuid() == 0 {
		return "user " + pgUser
	}
	return "this user"
}

// peerSystemsOf lists the systems an experiment runs on, in the order of
// every round: the latency adds worksteal with its tasks enqueued by
// another process (no local wake-up), and at defaults worksteal with no
// traffic at all (its pace timer alone); Call is worksteal's alone.
func peerSystemsOf(x peerExp, ws, wsQuiet, wsRemote, aq, rv peerSystem) []peerSystem {
	switch {
	case x.kind == expLatency && !x.run.defaults:
		return []peerSystem{ws, wsRemote, aq, rv}
	case x.kind == expLatency:
		return []peerSystem{ws, wsQuiet, wsRemote, aq, rv}
	case x.kind == expCall:
		return []peerSystem{ws, wsQuiet}
	}
	return []peerSystem{ws, aq, rv}
}

// peerLabel names a system in an experiment's rows.
func peerLabel(x peerExp, s peerSystem) string {
	w, ok := s.(*wsPeer)
	if !ok || (x.kind != expLatency && x.kind != expCall) {
		return s.name()
	}
	switch {
	case !x.run.defaults && w.cfg.remote:
		return "worksteal `Mux.Serve`, remote enqueue"
	case !x.run.defaults:
		return "worksteal `Mux.Serve`"
	case w.cfg.remote:
		return fmt.Sprintf("worksteal, %d fast exits/s, remote enqueue", int(w.cfg.fastExits))
	case w.cfg.fastExits == 0:
		return "worksteal, no traffic (pace timer)"
	}
	return fmt.Sprintf("worksteal, %d fast exits/s", int(w.cfg.fastExits))
}

func runPeerOnce(ctx context.Context, plan peerPlan, x peerExp, s peerSystem) (peerResult, error) {
	if err := s.reset(ctx); err != nil {
		return peerResult{}, err
	}
	switch x.kind {
	case expEnqueue:
		return peerEnqueue(ctx, plan.size(x, s.name()), x, s)
	case expProcess:
		return peerProcess(ctx, plan.size(x, s.name()), x, s)
	case expLatency:
		return peerLatency(ctx, plan, x, s)
	}
	return peerCall(ctx, plan, x, s)
}

func makeArgs(n int) []peerArgs {
	as := make([]peerArgs, n)
	for i := range as {
		as[i].ID = int64(i)
	}
	return as
}

// enqueueAll adds as with g goroutines, or in batches.
func enqueueAll(ctx context.Context, s peerSystem, as []peerArgs, g int, batched bool) error {
	if batched {
		return s.enqueueBatch(ctx, as)
	}
	var next atomic.Int64
	errs := make([]error, g)
	var wg sync.WaitGroup
	for k := range g {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(as)); i = next.Add(1) - 1 {
				if err := s.enqueue(ctx, as[i]); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func peerEnqueue(ctx context.Context, n int, x peerExp, s peerSystem) (peerResult, error) {
	as := makeArgs(n)
	t := time.Now()
	if err := enqueueAll(ctx, s, as, x.goroutines, x.batched); err != nil {
		return peerResult{}, err
	}
	r := peerResult{n: int64(n), rate: float64(n) / time.Since(t).Seconds()}
	w, err := s.waiting(ctx)
	if err != nil {
		return r, err
	}
	r.dups, r.missing = max(w-r.n, 0), max(r.n-w, 0)
	return r, nil
}

// fill enqueues as untimed: in batches where the system has them.
func fill(ctx context.Context, s peerSystem, as []peerArgs) error {
	err := s.enqueueBatch(ctx, as)
	if errors.Is(err, errUnsupported) {
		err = enqueueAll(ctx, s, as, 8, false)
	}
	return err
}

// peerProcess fills the queue (untimed), starts the workers and times
// them from their start to the end of the last task's handler.
func peerProcess(ctx context.Context, n int, x peerExp, s peerSystem) (peerResult, error) {
	if err := fill(ctx, s, makeArgs(n)); err != nil {
		return peerResult{}, err
	}
	if w, err := s.waiting(ctx); err != nil || w != int64(n) {
		return peerResult{}, fmt.Errorf("%d tasks waiting of %d enqueued (%v)", w, n, err)
	}
	tr := newTracker(n, x.run.wait)
	t0 := time.Now()
	stop, err := s.start(ctx, x.run, tr.handle)
	if err != nil {
		return peerResult{}, err
	}
	waitErr := tr.await(ctx, int64(n), 5*time.Minute)
	return finishRun(ctx, s, tr, int64(n), stop, waitErr, func(r *peerResult) {
		r.rate = float64(tr.unique.Load()) / time.Unix(0, tr.last.Load()).Sub(t0).Seconds()
	})
}

// finishRun stops the workers, waits for the store to show every task
// finished, and counts.
func finishRun(ctx context.Context, s peerSystem, tr *tracker, n int64, stop func() error, waitErr error, fill func(*peerResult)) (peerResult, error) {
	r := peerResult{n: n}
	fill(&r)
	if err := stop(); err != nil && ctx.Err() == nil {
		logf("peers: %s: stop: %v", s.name(), err)
		r.errors++
	}
	if waitErr != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		logf("peers: %s: %v", s.name(), waitErr)
	}
	r.dups, r.missing = tr.tally(n)
	left, err := s.left(ctx)
	if err != nil {
		return r, err
	}
	r.left = left
	return r, nil
}

// openLoop calls f at rate per second for d, each call on a goroutine of
// its own, due at fixed times whatever the calls' pace; it returns how
// many it made and waits for them all.
func openLoop(ctx context.Context, rate float64, d time.Duration, f func(i int64)) int64 {
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	var i int64
	for ; ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(start.Add(d)) {
			break
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		id := i
		wg.Go(func() { f(id) })
	}
	wg.Wait()
	return i
}

// peerLatency enqueues at peerRate for warm-up + window into a running
// system and measures, for the tasks enqueued in the window, the time from
// the enqueue's start to the handler's start.
func peerLatency(ctx context.Context, plan peerPlan, x peerExp, s peerSystem) (peerResult, error) {
	total := plan.warmup + plan.window
	tr := newTracker(int(peerRate*total.Seconds())+16, 0)
	tr.hist = &histogram{}
	tr.measureFrom = time.Now().Add(plan.warmup).UnixNano()
	stop, err := s.start(ctx, x.run, tr.handle)
	if err != nil {
		return peerResult{}, err
	}
	var n, failed int64
	if w, ok := s.(*wsPeer); ok && w.cfg.remote {
		n, failed, err = w.enqueueFromChild(ctx, peerRate, total)
		if err != nil {
			_ = stop()
			return peerResult{}, err
		}
	} else {
		var errs atomic.Int64
		n = openLoop(ctx, peerRate, total, func(i int64) {
			if err := s.enqueue(ctx, peerArgs{ID: i, At: time.Now().UnixNano()}); err != nil {
				errs.Add(1)
			}
		})
		failed = errs.Load()
	}
	waitErr := tr.await(ctx, n-failed, time.Minute)
	return finishRun(ctx, s, tr, n, stop, waitErr, func(r *peerResult) {
		r.hist, r.errors = tr.hist, failed
	})
}

// peerCall calls at peerRate for warm-up + window into a running system
// and measures each call of the window, from its start to its result.
func peerCall(ctx context.Context, plan peerPlan, x peerExp, s peerSystem) (peerResult, error) {
	total := plan.warmup + plan.window
	tr := newTracker(int(peerRate*total.Seconds())+16, 0)
	stop, err := s.start(ctx, x.run, tr.handle)
	if err != nil {
		return peerResult{}, err
	}
	h := &histogram{}
	measureFrom := time.Now().Add(plan.warmup)
	var errs atomic.Int64
	n := openLoop(ctx, peerRate, total, func(i int64) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		t := time.Now()
		if err := s.call(cctx, peerArgs{ID: i, At: t.UnixNano()}); err != nil {
			errs.Add(1)
			return
		}
		if !t.Before(measureFrom) {
			h.record(time.Since(t))
		}
	})
	waitErr := tr.await(ctx, n, time.Minute)
	return finishRun(ctx, s, tr, n, stop, waitErr, func(r *peerResult) {
		r.hist, r.errors = h, errs.Load()
	})
}
