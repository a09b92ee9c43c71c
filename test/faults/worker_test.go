package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// workerEnv carries a workerSpec (JSON) to a re-executed test binary.
const workerEnv = "WORKSTEAL_FAULTS_WORKER"

// workerSpec is what a worker process does: it serves "requests" that
// each enlist with a recruiter (inline, as a web server would after a fast
// exit) holding jobs.Drain, jobs.TidyStale and jobs.PromoteDue for one
// queue, until the queue has nothing pending, leased or delayed.
type workerSpec struct {
	Addr, Prefix, Queue, Log string
	Lease, Budget, Work      time.Duration
	Batch, MaxAttempts       int
	Poison                   string // payloads starting with it fail in the handler
}

func (s workerSpec) queueConfig() queue.Config {
	return queue.Config{Prefix: s.Prefix, Lease: s.Lease, MaxAttempts: s.MaxAttempts,
		BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond}
}

// Worker log lines, each written whole in one write so that a SIGKILL
// leaves whole lines: "B" a drain slice begins, "H id token attempt" the
// handler starts an item, "E" the slice ended, "X tidied drained" a clean
// exit with the recruiter's counts of items.
var errPoison = errors.New("poison item: the handler always fails it")

func runWorker(specJSON string) int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "worker spec:", err)
		return 2
	}
	if err := work(spec); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(spec workerSpec) error {
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	q, err := queue.New(rdb, spec.Queue, spec.queueConfig())
	if err != nil {
		return err
	}
	log, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	line := func(format string, args ...any) {
		_, _ = io.WriteString(log, fmt.Sprintf(format, args...))
	}
	rec, err := recruiter.New(rdb, recruiter.Config{Prefix: spec.Prefix, Inline: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	drain, err := jobs.Drain(q, func(_ context.Context, it queue.Item) ([]byte, error) {
		line("H %s %s %d\n", it.ID, it.Token, it.Attempt)
		if spec.Poison != "" && strings.HasPrefix(string(it.Payload), spec.Poison) {
			return nil, errPoison
		}
		time.Sleep(spec.Work) // the work, which, like much real work, ignores ctx
		return []byte(resultOf(string(it.Payload), it.Token)), nil
	}, jobs.DrainConfig{Batching: jobs.Batching{Batch: spec.Batch}})
	if err != nil {
		return err
	}
	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{})
	if err != nil {
		return err
	}
	promote, err := jobs.PromoteDue(q, jobs.PromoteConfig{})
	if err != nil {
		return err
	}
	logged := recruiter.Func(drain.Name(), func(ctx context.Context) (recruiter.Report, error) {
		line("B\n")
		defer line("E\n")
		return drain.Run(ctx)
	})
	for _, j := range []struct {
		job recruiter.Job
		cfg recruiter.JobConfig
	}{
		{logged, recruiter.JobConfig{Rate: 0.7, Budget: spec.Budget}},
		{tidy, recruiter.JobConfig{Rate: 0.15, Budget: 50 * time.Millisecond}},
		{promote, recruiter.JobConfig{Rate: 0.15, Budget: 50 * time.Millisecond}},
	} {
		if err := rec.Register(j.job, j.cfg); err != nil {
			return err
		}
	}

	ctx := context.Background()
	giveUp := time.Now().Add(2 * time.Minute)
	for i := 0; ; i++ {
		rec.Enlist(ctx) // a request that exited fast
		if i%20 == 0 {
			s, err := q.Depth(ctx)
			if err == nil && s.Pending+s.Leased+s.Delayed == 0 {
				break
			}
			if time.Now().After(giveUp) {
				return fmt.Errorf("queue not drained after 2 minutes: %+v", s)
			}
		}
		time.Sleep(500 * time.Microsecond) // the next request
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rec.Shutdown(sctx); err != nil {
		return err
	}
	var tidied, drained uint64
	for _, js := range rec.Stats().Jobs {
		switch js.Name {
		case tidy.Name():
			tidied = js.Items
		case drain.Name():
			drained = js.Items
		}
	}
	line("X %d %d\n", tidied, drained)
	return nil
}

// resultOf is the result a worker stores for a payload under a claim:
// reading it back says which claim's settle stood.
func resultOf(payload, token string) string { return "r:" + payload + "@" + token }

// workerProc is one worker process.
type workerProc struct {
	n      int
	cmd    *exec.Cmd
	log    string // its log of slices and items
	out    string // its stdout and stderr: the recruiter's log
	done   chan struct{}
	killed bool
}

// startWorker re-executes the test binary as worker n; it is killed in
// t.Cleanup if still running.
func startWorker(t *testing.T, spec workerSpec, dir string, n int) *workerProc {
	t.Helper()
	w := &workerProc{n: n, log: filepath.Join(dir, fmt.Sprintf("worker-%d.log", n)),
		out: filepath.Join(dir, fmt.Sprintf("worker-%d.out", n)), done: make(chan struct{})}
	spec.Log = w.log
	env, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(w.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(env))
	w.cmd.Stdout, w.cmd.Stderr = out, out
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %d: %v", n, err)
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill() // SIGKILL ends a stopped process too
		<-w.done
	})
	return w
}

func (w *workerProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// waitClean waits for the worker to exit and fails the test unless it
// exited 0.
func (w *workerProc) waitClean(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(within):
		t.Fatalf("worker %d still running after %v", w.n, within)
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		out, _ := os.ReadFile(w.out)
		t.Fatalf("worker %d exited %d:\n%s", w.n, code, tail(out, 4096))
	}
}

// lastLine is the worker log's last line ("" if empty).
func (w *workerProc) lastLine() string {
	data, err := os.ReadFile(w.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	return lines[len(lines)-1]
}

// midSlice reports whether the worker's log ends inside a drain slice.
func (w *workerProc) midSlice() bool {
	last := w.lastLine()
	return last == "B" || strings.HasPrefix(last, "H ")
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// handled is one "H" line: a handler started an item under a claim.
type handled struct {
	worker  int
	token   string
	attempt int
}

// workerLogs are the parsed logs of every worker.
type workerLogs struct {
	handled        map[string][]handled // by item id, in log order per worker
	slices         int                  // "B" lines
	tidied, exited int                  // summed over "X" lines; clean exits
}

func readWorkerLogs(t *testing.T, procs []*workerProc) workerLogs {
	t.Helper()
	wl := workerLogs{handled: map[string][]handled{}}
	for _, w := range procs {
		f, err := os.Open(w.log)
		if errors.Is(err, os.ErrNotExist) {
			continue // killed before it wrote anything
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "B":
				wl.slices++
			case len(f) == 4 && f[0] == "H":
				attempt, err := strconv.Atoi(f[3])
				if err != nil {
					t.Fatalf("%s: bad line %q", w.log, sc.Text())
				}
				wl.handled[f[1]] = append(wl.handled[f[1]], handled{worker: w.n, token: f[2], attempt: attempt})
			case len(f) == 3 && f[0] == "X":
				n, err := strconv.Atoi(f[1])
				if err != nil {
					t.Fatalf("%s: bad line %q", w.log, sc.Text())
				}
				wl.tidied += n
				wl.exited++
			}
		}
		_ = f.Close()
	}
	return wl
}

// lastClaim is the handled claim of id with the highest attempt: the one
// whose settle may stand, as each later claim counts one attempt more
// (only a Release does not count, and released items were not handled).
func (wl workerLogs) lastClaim(id string) (handled, bool) {
	var last handled
	for _, h := range wl.handled[id] {
		if h.attempt > last.attempt {
			last = h
		}
	}
	return last, last.attempt > 0
}
