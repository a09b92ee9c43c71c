package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// chainWorkerEnv makes the test binary a worker process (TestMain); it
// runs the crash tests' chains and fan-outs alike.
const chainWorkerEnv = "WORKSTEAL_TASKS_CHAIN_WORKER"

// chainWorkerSpec tells the worker process where to work and log.
type chainWorkerSpec struct{ processSpec }

// processSpec is what every worker process of this test binary is given:
// its Redis, the queue's prefix and lease, and its log's path.
type processSpec struct {
	Addr, Prefix, Log string
	Lease             time.Duration
}

func (s *processSpec) process() *processSpec { return s }

// openTestProcess starts a worker process that TestMain runs: it reads
// spec from envName's JSON, opens its log (each line one write(2):
// SIGKILL cannot lose it) and the queue "tasks" on its Redis.
func openTestProcess(envName string, spec interface{ process() *processSpec }) (log func(string), q *queue.Queue, err error) {
	if err := json.Unmarshal([]byte(os.Getenv(envName)), spec); err != nil {
		return nil, nil, err
	}
	p := spec.process()
	f, err := os.OpenFile(p.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	log = func(s string) { _, _ = f.WriteString(s + "\n") }
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	q, err = queue.New(rdb, "tasks", queue.Config{Prefix: p.Prefix, Lease: p.Lease})
	return log, q, err
}

type stepArgs struct{ Chain, Step int }

// chainSteps registers "step": it logs "run CHAIN STEP" to log, takes a
// little while, and returns the step's number.
func chainSteps(m *tasks.Mux, log func(string)) error {
	return handle(m, "step", func(ctx context.Context, a stepArgs) (int, error) {
		log(fmt.Sprintf("run %d %d", a.Chain, a.Step))
		time.Sleep(5 * time.Millisecond)
		return a.Step, nil
	})
}

type fanOutArgs struct{ FanOut, Child int }

// fanOutSteps registers "child", which logs "child FANOUT CHILD" and
// returns FANOUT*100+CHILD, and "final", which logs "final FANOUT" and
// returns its children's results as ChildResults reads them.
func fanOutSteps(m *tasks.Mux, log func(string)) error {
	if err := handle(m, "child", func(ctx context.Context, a fanOutArgs) (int, error) {
		log(fmt.Sprintf("child %d %d", a.FanOut, a.Child))
		time.Sleep(5 * time.Millisecond)
		return a.FanOut*100 + a.Child, nil
	}); err != nil {
		return err
	}
	return handle(m, "final", func(ctx context.Context, a fanOutArgs) ([]int, error) {
		log(fmt.Sprintf("final %d", a.FanOut))
		results, ok, err := tasks.ChildResults[int](ctx)
		time.Sleep(5 * time.Millisecond)
		if err != nil || !ok {
			return nil, fmt.Errorf("child results of fan-out %d: %v, %v", a.FanOut, ok, err)
		}
		return results, nil
	})
}

// runChainWorker is the worker process: it runs slices of one batch of 4
// until killed, logging "settled" after each that settled its items, so
// that every step logged before a "settled" is acked; after a slice that
// failed it logs "unsettled" (some items may be acked, some not).
func runChainWorker() int {
	var spec chainWorkerSpec
	log, q, err := openTestProcess(chainWorkerEnv, &spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mux := tasks.NewMux()
	if err := errors.Join(chainSteps(mux, log), fanOutSteps(mux, log)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	job, err := mux.Job(q, jobs.DrainConfig{Batching: jobs.Batching{Batch: 4, MaxBatches: 1}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		rep, err := job.Run(context.Background())
		switch {
		case err != nil: // a lease lost, a Redis call timed out: acks unknown
			fmt.Fprintln(os.Stderr, err)
			log("unsettled")
		case rep.Items > 0:
			log("settled")
		default:
			time.Sleep(5 * time.Millisecond) // idle: spare the CPU and the log
		}
	}
}

// startWorker starts a chain worker process on spec.
func startWorker(t *testing.T, spec chainWorkerSpec) *exec.Cmd {
	return startTestProcess(t, chainWorkerEnv, spec)
}

// startTestProcess starts this test binary again as the worker that
// TestMain runs when envName holds its spec; the test's cleanup kills it.
func startTestProcess(t *testing.T, envName string, spec any) *exec.Cmd {
	t.Helper()
	env, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envName+"="+string(env))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// workerBatch is one slice of a worker's log: the steps it ran, whether
// it logged "settled" (all of them acked), and whether it is open, cut
// by a kill before its end was logged.
type workerBatch struct {
	runs          []string
	settled, open bool
}

func readWorkerLog(t *testing.T, path string) []workerBatch {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var batches []workerBatch
	var cur workerBatch
	for _, l := range strings.Split(string(data), "\n") {
		switch l {
		case "":
		case "settled", "unsettled":
			cur.settled = l == "settled"
			batches = append(batches, cur)
			cur = workerBatch{}
		default:
			cur.runs = append(cur.runs, l)
		}
	}
	if len(cur.runs) > 0 {
		cur.open = true
		batches = append(batches, cur)
	}
	return batches
}

// killIf SIGKILLs the worker if kill holds for its log, and reports
// whether it did. It checks the log again with the worker stopped
// (SIGSTOP, waited for), so that the log it judged is the one it ends
// with.
func killIf(t *testing.T, cmd *exec.Cmd, log string, kill func([]workerBatch) bool) bool {
	t.Helper()
	if !kill(readWorkerLog(t, log)) {
		return false
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			t.Fatalf("wait for the worker to stop: %v", err)
		}
	}
	if !ws.Stopped() {
		t.Fatalf("the worker ended: %v", ws)
	}
	if !kill(readWorkerLog(t, log)) {
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return true
}

// midBatch: the worker's log ends in a batch that ran at least one step
// with prefix, its end not logged.
func midBatch(bs []workerBatch, prefix string) bool {
	if len(bs) == 0 || !bs[len(bs)-1].open {
		return false
	}
	return slices.ContainsFunc(bs[len(bs)-1].runs, func(r string) bool { return strings.HasPrefix(r, prefix) })
}

// runCount counts the runs in bs of steps with prefix.
func runCount(bs []workerBatch, prefix string) int {
	n := 0
	for _, b := range bs {
		for _, r := range b.runs {
			if strings.HasPrefix(r, prefix) {
				n++
			}
		}
	}
	return n
}

// A worker process SIGKILLed mid-chain loses no step, and no step it
// acked runs again: a fresh worker finishes every chain, running again
// only the steps of the killed worker's unsettled batch.
func TestSIGKILLMidChain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const lease = 300 * time.Millisecond
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: lease}
	b := setup(t, rdb, cfg)
	var (
		mu   sync.Mutex // handlers run side by side
		runs []string
	)
	if err := chainSteps(b.mux, func(s string) { mu.Lock(); runs = append(runs, s); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 60*time.Second)
	const chains, steps = 10, 5
	ids := make([]string, chains)
	for c := range ids {
		st := make([]tasks.Step, steps)
		for s := range st {
			st[s] = stepOf("step", stepArgs{Chain: c, Step: s + 1})
		}
		var err error
		if ids[c], err = tasks.EnqueueChain(ctx, b.client, st); err != nil {
			t.Fatal(err)
		}
	}

	logPath := filepath.Join(t.TempDir(), "worker.log")
	cmd := startWorker(t, chainWorkerSpec{processSpec{Addr: srv.Addr(), Prefix: cfg.Prefix, Log: logPath, Lease: lease}})
	// Kill it mid-batch, about half-way through the chains' steps.
	testrig.Eventually(t, 30*time.Second, "the worker half-way, mid-batch", func() bool {
		return killIf(t, cmd, logPath, func(bs []workerBatch) bool {
			return runCount(bs, "run") > chains*steps/2 && midBatch(bs, "run")
		})
	}, func() string { return "" })
	killed := readWorkerLog(t, logPath)
	// inFlight: ran, but not known to be acked.
	acked, inFlight := map[string]bool{}, map[string]bool{}
	for _, b := range killed {
		for _, r := range b.runs {
			if b.settled {
				acked[r] = true
			} else {
				inFlight[r] = true
			}
		}
	}
	if len(inFlight) == 0 {
		t.Fatal("killed between batches; the test wants a kill mid-batch")
	}

	// A fresh worker (this process) finishes the chains, with Tidy handing
	// back the killed worker's leases once they expire.
	b.drive(t, "every chain done", func() bool {
		if _, err := qstore.Of(b.q).Tidy(ctx, queue.BatchMax); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if st, err := tasks.ChainStatus(ctx, b.client, id); err != nil || st.State != tasks.StateDone {
				return false
			}
		}
		return true
	})
	again := map[string]int{}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range runs {
		if acked[r] {
			t.Errorf("%s was acked by the killed worker and ran again", r)
		}
		again[r]++
	}
	for c := range chains {
		for s := 1; s <= steps; s++ {
			r := fmt.Sprintf("run %d %d", c, s)
			if !acked[r] && !inFlight[r] && again[r] == 0 {
				t.Errorf("%s never ran: lost", r)
			}
			if again[r] > 1 {
				t.Errorf("%s ran %d times in the fresh worker", r, again[r])
			}
		}
	}
	for _, id := range ids {
		if got, err := tasks.WaitChain[int](ctx, b.client, id); err != nil || got != steps {
			t.Fatalf("chain %s = %d, %v; want %d", id, got, err, steps)
		}
	}
	t.Logf("killed after %d runs: %d acked, %d in flight; the fresh worker ran %d", runCount(killed, "run"), len(acked), len(inFlight), len(runs))
}

// Worker processes SIGKILLed while fan-outs' children run (and once,
// if it comes in time, while final steps run) lose no child and no final
// step: each final step runs after its last child was acked, once (again
// only if a kill cut its own run before the ack), and sees every child's
// result; no acked child runs again.
func TestSIGKILLMidFanOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const lease = 300 * time.Millisecond
	// Kills and lost leases on a loaded machine cost attempts: spare some.
	cfg := queue.Config{Prefix: redistest.Prefix(t), Lease: lease, MaxAttempts: 20}
	b := setup(t, rdb, cfg)
	ctx := testrig.Context(t, 5*time.Minute)
	const fanOuts, children = 20, 10
	ids := make([]string, fanOuts)
	for f := range ids {
		st := make([]tasks.Step, children)
		for c := range st {
			st[c] = stepOf("child", fanOutArgs{FanOut: f, Child: c + 1})
		}
		var err error
		if ids[f], err = tasks.EnqueueFanOut(ctx, b.client, st, stepOf("final", fanOutArgs{FanOut: f})); err != nil {
			t.Fatal(err)
		}
	}
	// done also hands back the killed workers' leases, as a worker's
	// maintenance would.
	done := func() bool {
		if _, err := qstore.Of(b.q).Tidy(ctx, queue.BatchMax); err != nil {
			t.Fatal(err)
		}
		if _, err := qstore.Of(b.q).Promote(ctx, queue.BatchMax); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			st, err := tasks.FanOutStatus(ctx, b.client, id)
			if err != nil || st.State == tasks.StateFailed {
				t.Fatalf("fan-out %s: %+v, %v", id, st, err)
			}
			if st.State != tasks.StateDone {
				return false
			}
		}
		return true
	}
	stats := func() string {
		d, _ := b.q.Depth(context.Background())
		return "queue: " + fmtDepth(d)
	}

	// Two workers killed amid children, a fifth and two fifths of the way
	// through them; a third amid final steps, unless it finishes first;
	// then, if it was killed, a last one that finishes.
	dir := t.TempDir()
	var logs []string
	var cmd *exec.Cmd
	start := func() string {
		logs = append(logs, filepath.Join(dir, fmt.Sprintf("worker-%d.log", len(logs))))
		cmd = startWorker(t, chainWorkerSpec{processSpec{Addr: srv.Addr(), Prefix: cfg.Prefix, Log: logs[len(logs)-1], Lease: lease}})
		return logs[len(logs)-1]
	}
	for w := range 2 {
		log := start()
		testrig.Eventually(t, time.Minute, fmt.Sprintf("worker %d mid-batch amid children", w), func() bool {
			done()
			return killIf(t, cmd, log, func(bs []workerBatch) bool {
				return runCount(bs, "child") >= fanOuts*children/5 && midBatch(bs, "child")
			})
		}, stats)
	}
	log := start()
	finalKilled := false
	testrig.Eventually(t, time.Minute, "worker 2 mid-batch amid final steps, or every fan-out done", func() bool {
		if done() {
			return true
		}
		finalKilled = killIf(t, cmd, log, func(bs []workerBatch) bool { return midBatch(bs, "final") })
		return finalKilled
	}, stats)
	if finalKilled {
		log = start()
		testrig.Eventually(t, time.Minute, "every fan-out done", done, stats)
	}
	// Killed between batches, the last worker has every run it logged acked.
	testrig.Eventually(t, 30*time.Second, "the last worker between batches", func() bool {
		return killIf(t, cmd, log, func(bs []workerBatch) bool { return len(bs) == 0 || !bs[len(bs)-1].open })
	}, stats)

	// The runs of each step, in order, each with its batch's index in the
	// workers' logs end to end (the workers ran one after the other).
	type run struct {
		batch int
		acked bool
	}
	runs := map[string][]run{}
	var batches []workerBatch
	for _, l := range logs {
		batches = append(batches, readWorkerLog(t, l)...)
	}
	for i, bt := range batches {
		for _, r := range bt.runs {
			runs[r] = append(runs[r], run{i, bt.settled})
		}
	}
	again := map[string]int{}
	for r, rs := range runs {
		again[strings.Fields(r)[0]] += len(rs) - 1
		for _, x := range rs[:len(rs)-1] {
			if x.acked {
				t.Errorf("%s was acked (batch %d) and ran again: %d runs", r, x.batch, len(rs))
				break
			}
		}
	}
	for f, id := range ids {
		lastChild, want := -1, make([]int, children)
		for c := range children {
			want[c] = f*100 + c + 1
			rs := runs[fmt.Sprintf("child %d %d", f, c+1)]
			if len(rs) == 0 {
				t.Errorf("child %d %d never ran: lost", f, c+1)
				continue
			}
			lastChild = max(lastChild, rs[len(rs)-1].batch)
		}
		// The last child's ack is its batch's settle, at that batch's end.
		if rs := runs[fmt.Sprintf("final %d", f)]; len(rs) == 0 {
			t.Errorf("final %d never ran: lost", f)
		} else if rs[0].batch <= lastChild {
			t.Errorf("final %d ran in batch %d, before its last child's batch %d ended", f, rs[0].batch, lastChild)
		}
		if got, err := tasks.WaitFanOut[[]int](ctx, b.client, id); err != nil || !slices.Equal(got, want) {
			t.Errorf("fan-out %d: WaitFanOut = %v, %v; want %v", f, got, err, want)
		}
		if st, err := tasks.FanOutStatus(ctx, b.client, id); err != nil || st.State != tasks.StateDone || st.Done != children || st.Children != children {
			t.Errorf("fan-out %d: FanOutStatus = %+v, %v", f, st, err)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Errorf("Depth = %s, %v; want an empty queue", fmtDepth(d), err)
	}
	t.Logf("%d workers, %d batches; ran again: %d children, %d final steps (a final step's run killed: %v)",
		len(logs), len(batches), again["child"], again["final"], finalKilled)
}
