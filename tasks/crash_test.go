package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

const chainWorkerEnv = "WORKSTEAL_TASKS_CHAIN_WORKER"

// chainWorkerSpec tells the worker process where to work and log.
type chainWorkerSpec struct {
	Addr, Prefix, Log string
	Lease             time.Duration
}

type stepArgs struct{ Chain, Step int }

// chainSteps registers "step": it logs "run CHAIN STEP" to log, takes a
// little while, and returns the step's number.
func chainSteps(m *tasks.Mux, log func(string)) error {
	return tasks.Handle(m, "step", func(ctx context.Context, a stepArgs) (int, error) {
		log(fmt.Sprintf("run %d %d", a.Chain, a.Step))
		time.Sleep(5 * time.Millisecond)
		return a.Step, nil
	})
}

// runChainWorker is the worker process: it runs slices of one batch of 4
// until killed, logging "settled" after each, so that every step logged
// before the last "settled" is acked.
func runChainWorker() int {
	var spec chainWorkerSpec
	if err := json.Unmarshal([]byte(os.Getenv(chainWorkerEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	f, err := os.OpenFile(spec.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := func(s string) { _, _ = f.WriteString(s + "\n") } // a write(2): SIGKILL cannot lose it
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr})
	q, err := queue.New(rdb, "tasks", queue.Config{Prefix: spec.Prefix, Lease: spec.Lease})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mux := tasks.NewMux()
	if err := chainSteps(mux, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	job, err := mux.Job(q, jobs.DrainConfig{Batching: jobs.Batching{Batch: 4, MaxBatches: 1}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		if _, err := job.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		log("settled")
	}
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
	var runs []string
	if err := chainSteps(b.mux, func(s string) { runs = append(runs, s) }); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 60*time.Second)
	const chains, steps = 10, 5
	ids := make([]string, chains)
	for c := range ids {
		st := make([]tasks.Step, steps)
		for s := range st {
			st[s] = tasks.Step{Type: "step", Args: stepArgs{Chain: c, Step: s + 1}}
		}
		var err error
		if ids[c], err = tasks.EnqueueChain(ctx, b.client, st...); err != nil {
			t.Fatal(err)
		}
	}

	logPath := filepath.Join(t.TempDir(), "worker.log")
	spec, _ := json.Marshal(chainWorkerSpec{Addr: srv.Addr(), Prefix: cfg.Prefix, Log: logPath, Lease: lease})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), chainWorkerEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Kill it mid-batch, about half-way through the chains' steps.
	testrig.Eventually(t, 30*time.Second, "the worker half-way, mid-batch", func() bool {
		data, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		return len(lines) > chains*steps/2 && strings.HasPrefix(lines[len(lines)-1], "run")
	}, func() string { return "" })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	killed := strings.Split(strings.TrimSpace(string(data)), "\n")
	acked, inFlight := map[string]bool{}, map[string]bool{}
	for _, l := range killed {
		if l == "settled" {
			for r := range inFlight {
				acked[r] = true
			}
			clear(inFlight)
			continue
		}
		inFlight[l] = true
	}
	if len(inFlight) == 0 {
		t.Fatal("killed between batches; the test wants a kill mid-batch")
	}

	// A fresh worker (this process) finishes the chains, with Tidy handing
	// back the killed worker's leases once they expire.
	b.drive(t, "every chain done", func() bool {
		if _, err := b.q.Tidy(ctx, queue.BatchMax); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if st, err := tasks.ChainStatus(ctx, b.client, id); err != nil || st.State != queue.ChainDone {
				return false
			}
		}
		return true
	})
	again := map[string]int{}
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
	t.Logf("killed after %d runs: %d acked, %d in flight; the fresh worker ran %d", len(killed), len(acked), len(inFlight), len(runs))
}
