package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// The CPU-bound tasks of the fleet's "tasks" variants (-mw tasks): the
// application work that tasks bring into web servers' stolen time, under
// the automatic pace users get by default. The orchestrator gives a
// process its backlog (POST /backlog) tasksRamp before loading it, so that
// the job's backlog streak is at its full pace when the load begins, and
// lets it go (POST /idle) after: what is left then is done as no-ops, so
// that no process burns a core while another is measured.
const (
	tasksEvery = time.Second // as README's tasks example
	// tasksRamp is enough for a streak to reach its pace: its gaps halve
	// from Every with each slice that reports More (1 s, 0.5 s, ...).
	tasksRamp = 1500 * time.Millisecond
	// tasksBacklog outlasts a run: a process burns at most a quarter of
	// its time in a backlog, 125 tasks of 2 ms a second.
	tasksBacklog = 1000
	// tasksWait is how long a task of the "waiting" variant waits.
	tasksWait = 50 * time.Millisecond
)

// burnArgs is a task of the burn type: its number, to tell tasks apart.
type burnArgs struct {
	N int `json:"n"`
}

var burnTask = tasks.Define[burnArgs, struct{}]("burn")

// burner is a service's typed tasks: the handler, and its backlog.
type burner struct {
	c       *tasks.Client
	q       *queue.Queue
	burning atomic.Bool // the backlog's tasks do their work, not no-ops
	mu      sync.Mutex
	next    int
}

// registerTasks registers the typed-task job, paced by Every alone, with
// f.taskConc handlers at once (0: Drain's default), each task burning
// f.taskCPU or, with f.taskWait, waiting that long, and serves /backlog and
// /idle on mux.
func registerTasks(rec *recruiter.Recruiter, q *queue.Queue, w *worker, f serviceFlags, mux *http.ServeMux) error {
	iters := calibrateBurn(f.taskCPU)
	tm := tasks.NewMux()
	b := &burner{q: q}
	if err := burnTask.Handle(tm, func(ctx context.Context, _ burnArgs) (struct{}, error) {
		if !b.burning.Load() {
			return struct{}{}, nil
		}
		if f.taskWait > 0 {
			wait(ctx, f.taskWait)
		} else {
			burn(iters)
		}
		w.processed.Add(1)
		return struct{}{}, nil
	}); err != nil {
		return err
	}
	job, err := tm.Job(q, jobs.DrainConfig{Concurrency: f.taskConc})
	if err != nil {
		return err
	}
	if b.c, err = tasks.NewClient(q); err != nil {
		return err
	}
	mux.HandleFunc("POST /backlog", func(rw http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b.burning.Store(true)
		if err := b.fill(r.Context(), n); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("POST /idle", func(rw http.ResponseWriter, r *http.Request) {
		b.burning.Store(false)
	})
	return rec.Register(job, recruiter.JobConfig{Every: tasksEvery})
}

// fill enqueues n tasks, up to a thousand per round trip.
func (b *burner) fill(ctx context.Context, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	args := make([]burnArgs, 0, queue.BatchMax)
	for n > 0 {
		args = args[:0]
		for range min(n, queue.BatchMax) {
			args = append(args, burnArgs{N: b.next})
			b.next++
		}
		if _, err := burnTask.EnqueueMany(ctx, b.c, args); err != nil {
			return fmt.Errorf("backlog: %w", err)
		}
		n -= len(args)
	}
	return nil
}

// floorRate is how many times a second the floor's goroutine burns: the
// most a tasks process burns in a backlog (see tasksBacklog).
const floorRate = 125

// burnFloor is the floor of the CPU-bound rows: the same service without
// worksteal, whose own goroutine burns d at a time, floorRate times a
// second, from POST /backlog to POST /idle, as a tasks process burns its
// backlog. It tells what CPU work inside the service costs its requests
// on this machine, whatever runs it. w counts the bursts.
func burnFloor(ctx context.Context, d time.Duration, w *worker, mux *http.ServeMux) {
	iters := calibrateBurn(d)
	var loaded atomic.Bool
	mux.HandleFunc("POST /backlog", func(http.ResponseWriter, *http.Request) { loaded.Store(true) })
	mux.HandleFunc("POST /idle", func(http.ResponseWriter, *http.Request) { loaded.Store(false) })
	tick := time.NewTicker(time.Second / floorRate)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if loaded.Load() {
				burn(iters)
				w.processed.Add(1)
			}
		}
	}
}

// calibrateBurn finds how many rounds of burn take d of CPU on this
// machine: the fastest of a few tries, so that a busy moment while
// calibrating does not make every task lighter.
func calibrateBurn(d time.Duration) int {
	const probe = 20_000
	best := time.Duration(1 << 62)
	for range 7 {
		t := time.Now()
		burn(probe)
		best = min(best, time.Since(t))
	}
	return max(1, int(float64(probe)*float64(d)/float64(max(best, time.Microsecond))))
}

// burn does n rounds of xorshift: CPU work the compiler cannot drop.
func burn(n int) {
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink.Add(int64(x & 1))
}
