package tasks

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
)

// ErrWorkerStopped is the cause with which [Mux.Serve] ends the context
// of a handler still running at its shutdown's deadline: the task goes
// back to the queue, its attempt unused, and its failure is not reported.
var ErrWorkerStopped = drain.ErrStopped

// WorkerConfig configures [Mux.Serve]. The zero value is valid.
type WorkerConfig struct {
	// Concurrency is how many handlers run at once, from 1 to 1,000.
	// Unlike a stolen slice's, they may burn every CPU: a worker serves
	// no requests. Default 32.
	Concurrency int
	// ShutdownTimeout is how long the started handlers may run on once
	// Serve's context has ended (SIGTERM); then those still running see
	// their contexts end with [ErrWorkerStopped], and their tasks go
	// back to the queue. 0: each runs to its end, or to its lease's
	// margin, which ends its context anyway. A handler that ignores its
	// context's end holds Serve at most a few seconds past the
	// ShutdownTimeout (or Abort): Serve then returns an error wrapping
	// [ErrWorkerStopped], and that handler's batch comes back as a
	// crash's would. Keep it below the orchestrator's grace period
	// (Kubernetes: 30 s by default).
	ShutdownTimeout time.Duration
	// Abort, closed once Serve's context has ended, ends the wait at
	// once, as the ShutdownTimeout would: close it on a second signal.
	Abort <-chan struct{}
}

// Serve works q off as a dedicated worker, until ctx ends: it claims
// tasks and runs them back to back, Concurrency at once, with no budget
// and no pacing, beside any web processes that steal time on the same
// queue. Everything a stolen slice has holds here: the handlers and
// their middleware, limits, priorities, cancellation, timeouts, the
// task's [Info], the failures' log and the spans. It returns nil once
// ctx has ended and its handlers are done, an error wrapping
// [ErrWorkerStopped] if some ignore their contexts' end past the
// shutdown's deadline (see ShutdownTimeout), or an error at once for an
// invalid argument; a Redis outage is logged, and Serve goes on.
//
// Shutdown: once ctx ends, Serve claims nothing more and hands back the
// tasks it claimed and did not start, their attempts unused; started
// handlers finish, up to cfg.ShutdownTimeout or cfg.Abort, after which
// their contexts end with [ErrWorkerStopped] and their tasks go back,
// their attempts unused (as a [Snooze] of no delay: a task stopped so
// more than 100 times fails an attempt). A crash loses nothing either:
// the leases expire, and the next claim hands the tasks back, each
// having used an attempt.
//
// Serve maintains q as its claims go, as [Mux.Job] does. The
// recruiter's other jobs (tidying, eviction, schedules) run on its pace
// timer in a process without traffic too, so a worker that also has a
// recruiter with those jobs carries them; see docs/operations.md.
func (m *Mux) Serve(ctx context.Context, q *queue.Queue, cfg WorkerConfig) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	case cfg.Concurrency < 0 || cfg.Concurrency > workerConcurrencyMax:
		return fmt.Errorf("%w: WorkerConfig.Concurrency %d is not in [1, %d]", ErrInvalidArgument, cfg.Concurrency, workerConcurrencyMax)
	case cfg.ShutdownTimeout < 0:
		return fmt.Errorf("%w: WorkerConfig.ShutdownTimeout %v is negative", ErrInvalidArgument, cfg.ShutdownTimeout)
	}
	handlers := cmp.Or(cfg.Concurrency, workerConcurrencyDefault)
	job, err := m.Job(q, jobs.DrainConfig{Concurrency: handlers, Batching: jobs.Batching{Batch: workerBatch(handlers)}})
	if err != nil {
		return err
	}
	log := m.loggerFor(ctx)
	return drain.Serve(ctx, job, drain.ServeConfig{
		ShutdownTimeout: cfg.ShutdownTimeout,
		Abort:           cfg.Abort,
		OnError: func(err error) {
			msg := "worksteal: a worker's slice failed; it goes on"
			if ctx.Err() != nil {
				msg = "worksteal: a worker's last slice failed at its shutdown; its tasks come back as their leases expire"
			}
			log.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("queue", q.Name()), slog.Any("error", err))
		},
	})
}

const (
	workerConcurrencyDefault = 32
	workerConcurrencyMax     = 1000
)

// workerBatch is a worker's claim: whole waves of its handlers, about
// 100 items, so that no wave of a batch runs a few handlers while the
// others wait for the next batch.
func workerBatch(handlers int) int {
	return min(handlers*max(1, 100/handlers), queue.BatchMax)
}
