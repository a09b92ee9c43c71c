package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/worksteal/worksteal/jobs"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// The fleet's job settings ("default-ish"), shared by the services and the
// daemon so that both do the same work at the same pace: the daemon's
// tickers are the jobs' Every, its batches the jobs' default batches.
const (
	drainRate    = 0.05
	drainEvery   = 200 * time.Millisecond
	tidyRate     = 0.01
	tidyEvery    = time.Second
	promoteRate  = 0.01
	promoteEvery = time.Second
	sliceBudget  = 50 * time.Millisecond // the recruiter's default
	queueName    = "fleet"
)

// serviceFlags configure a service or daemon process.
type serviceFlags struct {
	redis  string
	prefix string
	mw     string // none | empty | job | queue
	rate   float64
	inline bool
	work   time.Duration
	job    string // wait | cpu
	paced  bool
	press  time.Duration
	// taskCPU is what one task of -mw tasks burns, taskWait how long it
	// waits instead (no CPU) if set, and taskConc how many run at once in a
	// slice.
	taskCPU  time.Duration
	taskWait time.Duration
	taskConc int
	// floor: with -mw none, a plain goroutine burns taskCPU at a time,
	// floorRate times a second, while loaded: CPU work without worksteal.
	floor bool
	// The peer benchmark's enqueuer (-role enqueuer).
	enqueueRate float64
	enqueueFor  time.Duration
}

func (f *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.redis, "redis", "", "service: Redis address")
	fs.StringVar(&f.prefix, "prefix", "worksteal", "service: key prefix of the recruiter and the queue")
	fs.StringVar(&f.mw, "mw", "none", "service: none (no middleware), empty (middleware, no jobs), job (one job at a fixed rate), tasks (typed tasks burning -task-cpu each, automatic pace, a backlog), queue (drain, tidy, promote)")
	fs.DurationVar(&f.taskCPU, "task-cpu", 2*time.Millisecond, "service: CPU one task burns (-mw tasks)")
	fs.DurationVar(&f.taskWait, "task-wait", 0, "service: if set, how long one task waits, burning no CPU, instead of -task-cpu (-mw tasks)")
	fs.Float64Var(&f.enqueueRate, "enqueue-rate", 500, "enqueuer: peer tasks per second")
	fs.DurationVar(&f.enqueueFor, "enqueue-for", time.Second, "enqueuer: how long to enqueue")
	fs.IntVar(&f.taskConc, "task-concurrency", 0, "service: jobs.DrainConfig.Concurrency of the tasks job (-mw tasks; 0: its default)")
	fs.BoolVar(&f.floor, "burn-floor", false, "service: with -mw none, a goroutine burning -task-cpu at a time, 125 times a second while loaded (POST /backlog to POST /idle)")
	fs.Float64Var(&f.rate, "rate", 0.01, "service: rate of the CPU job (-mw job)")
	fs.BoolVar(&f.inline, "inline", false, "service: inline mode")
	fs.DurationVar(&f.work, "work", 20*time.Millisecond, "service: length of one slice of the job (-mw job)")
	fs.StringVar(&f.job, "job", "wait", "service: what the job's slice does for -work: wait (like Redis-bound work) or cpu (burns a core)")
	fs.BoolVar(&f.paced, "paced", false, "service: the queue's jobs by Every alone (automatic pace, with its timer), not fixed rates")
	fs.DurationVar(&f.press, "pressure", 0, "service: recruiter.Config.Pressure (0: its default; negative: the gate off)")
}

// serviceStats is what a service or daemon reports on GET /stats.
type serviceStats struct {
	Requests  int64                `json:"requests"`
	LockRT    int64                `json:"lock_rt"`  // the recruiter's client: locks, probes, cooldowns
	QueueRT   int64                `json:"queue_rt"` // the jobs' client: claim, settle, tidy, promote
	Processed int64                `json:"processed"`
	Pending   int64                `json:"pending"` // the queue's, when the service has one
	Jobs      []recruiter.JobStats `json:"jobs"`
	Returns   []returnSeen         `json:"returns"`
}

// returnSeen is a claim of an item that had been claimed before: for an
// abandoned item, the moment its stale lease was seen back in service.
type returnSeen struct {
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
	At      int64  `json:"at"` // Unix ns
}

// worker is the state of a service's or daemon's queue work.
type worker struct {
	processed atomic.Int64
	mu        sync.Mutex
	returns   []returnSeen
}

// handle is the drain handler: no real work, a record of re-claims.
func (w *worker) handle(_ context.Context, it queue.Item) ([]byte, error) {
	w.processed.Add(1)
	if it.Attempt > 1 {
		w.mu.Lock()
		w.returns = append(w.returns, returnSeen{ID: it.ID, Attempt: it.Attempt, At: time.Now().UnixNano()})
		w.mu.Unlock()
	}
	return nil, nil
}

// queueJobs builds the three maintenance jobs of the fleet's queue.
func queueJobs(q *queue.Queue, w *worker) (drain, tidy, promote recruiter.Job, err error) {
	drain, err1 := jobs.Drain(q, w.handle, jobs.DrainConfig{})
	tidy, err2 := jobs.TidyStale(q, jobs.TidyConfig{})
	promote, err3 := jobs.PromoteDue(q, jobs.PromoteConfig{})
	return drain, tidy, promote, errors.Join(err1, err2, err3)
}

// runService is a lean net/http service wired as the README shows, or
// (role daemon) a dedicated maintenance loop; both answer GET /stats.
func runService(role string, f serviceFlags) error {
	if f.redis == "" {
		return errors.New("-redis is required")
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	lockRDB, lockRT := newCountedClient(f.redis, 16)
	queueRDB, queueRT := newCountedClient(f.redis, 16)
	defer lockRDB.Close()
	defer queueRDB.Close()
	q, err := queue.New(queueRDB, queueName, queue.Config{Prefix: f.prefix})
	if err != nil {
		return err
	}
	w := &worker{}
	var requests atomic.Int64
	var rec *recruiter.Recruiter
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /fast", func(rw http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		recruiter.MarkFastExit(r.Context()) // a cache hit
		rw.Header().Set("Content-Length", "3")
		_, _ = rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /stats", func(rw http.ResponseWriter, r *http.Request) {
		s := serviceStats{Requests: requests.Load(), LockRT: lockRT.Load(), QueueRT: queueRT.Load(), Processed: w.processed.Load()}
		if f.mw == "tasks" {
			if d, err := q.Depth(r.Context()); err == nil {
				s.Pending = d.Pending
			}
		}
		if rec != nil {
			s.Jobs = rec.Stats().Jobs
		}
		w.mu.Lock()
		s.Returns = append([]returnSeen(nil), w.returns...)
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(s)
	})
	var handler http.Handler = mux
	var loopDone chan struct{}

	switch {
	case role == "daemon":
		loopDone = make(chan struct{})
		go func() { defer close(loopDone); daemonLoop(ctx, q, w) }()
	case f.mw == "none":
		if f.floor {
			go burnFloor(ctx, f.taskCPU, w, mux)
		}
	default:
		rec, err = recruiter.New(lockRDB, recruiter.Config{Prefix: f.prefix, Inline: f.inline, Pressure: f.press})
		if err != nil {
			return err
		}
		if err := registerJobs(rec, q, w, f, mux); err != nil {
			return err
		}
		handler = stealhttp.Middleware(rec)(mux)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Println("listening", l.Addr().String())

	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if rec != nil {
		err = errors.Join(err, rec.Shutdown(sctx))
	}
	if loopDone != nil {
		<-loopDone
	}
	return err
}

// registerJobs gives the recruiter the jobs the -mw flag asks for.
func registerJobs(rec *recruiter.Recruiter, q *queue.Queue, w *worker, f serviceFlags, mux *http.ServeMux) error {
	switch f.mw {
	case "empty":
		return nil
	case "job":
		work, burn := f.work, f.job == "cpu"
		job := recruiter.Func("work", func(ctx context.Context) (recruiter.Report, error) {
			if burn {
				spin(ctx, work)
			} else {
				wait(ctx, work)
			}
			return recruiter.Report{Items: 1}, nil
		})
		return rec.Register(job, recruiter.JobConfig{Rate: f.rate})
	case "tasks":
		return registerTasks(rec, q, w, f, mux)
	case "queue":
		drain, tidy, promote, err := queueJobs(q, w)
		if err != nil {
			return err
		}
		if f.paced {
			return errors.Join(
				rec.Register(drain, recruiter.JobConfig{Every: drainEvery}),
				rec.Register(tidy, recruiter.JobConfig{Every: tidyEvery}),
				rec.Register(promote, recruiter.JobConfig{Every: promoteEvery}),
			)
		}
		return errors.Join(
			rec.Register(drain, recruiter.JobConfig{Rate: drainRate, Every: drainEvery}),
			rec.Register(tidy, recruiter.JobConfig{Rate: tidyRate, Every: tidyEvery}),
			rec.Register(promote, recruiter.JobConfig{Rate: promoteRate, Every: promoteEvery}),
		)
	}
	return fmt.Errorf("unknown -mw %q", f.mw)
}

// spin burns CPU for d, or until ctx is done: the pessimistic stolen work,
// which competes with requests for the cores (Redis-bound work would
// mostly wait).
func spin(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		for i := range 2000 {
			x += i
		}
	}
	sink.Add(int64(x))
}

var sink atomic.Int64

// wait is stolen work that mostly waits (on Redis, say) for d.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// daemonLoop is the dedicated worker a team would otherwise deploy: a
// ticker at the drain's Every that drains while a backlog remains, and
// tidies and promotes at their Every; each call is a slice of the same
// job with the same budget and batch as the stolen work.
func daemonLoop(ctx context.Context, q *queue.Queue, w *worker) {
	drain, tidy, promote, err := queueJobs(q, w)
	if err != nil {
		slog.Error("daemon: jobs", slog.Any("error", err))
		return
	}
	slice := func(j recruiter.Job) bool {
		sctx, cancel := context.WithTimeout(ctx, sliceBudget)
		defer cancel()
		rep, err := j.Run(sctx)
		if err != nil && ctx.Err() == nil {
			slog.Warn("daemon: slice", slog.String("job", j.Name()), slog.Any("error", err))
		}
		return rep.More && ctx.Err() == nil
	}
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	var lastMaint time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.Sub(lastMaint) >= tidyEvery-drainEvery/2 {
				lastMaint = now
				for slice(tidy) {
				}
				for slice(promote) {
				}
			}
			for slice(drain) {
			}
		}
	}
}
