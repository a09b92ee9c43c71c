package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/recruiter"
)

// ErrStopped is the cause with which a dedicated worker ends the contexts
// of the handlers still running at its shutdown's deadline (see Serve):
// their items go back to the queue, their attempts unused. Package tasks
// exports it as ErrWorkerStopped.
var ErrStopped = errors.New("worksteal: the worker stopped before the task finished")

// ServeConfig configures Serve; the job's own Config says the rest.
type ServeConfig struct {
	// ShutdownTimeout is how long started handlers may run on once
	// Serve's context has ended; 0: until their leases' margins end them.
	ShutdownTimeout time.Duration
	// Abort, once closed after Serve's context has ended, ends the wait
	// as the ShutdownTimeout would (a second signal).
	Abort <-chan struct{}
	// OnError hears the errors of slices (Redis down, a settle that came
	// too late); Serve goes on after each, backing off. Nil: dropped.
	OnError func(error)
}

// Serve works job, a drain made by New, as a dedicated worker: its slices
// back to back, with no budget but workSlice's and no pacing, the
// handlers free to burn every CPU (a worker serves no requests). Between
// slices that found nothing it waits for the queue's bell (an enqueue in
// this process) or a poll, from idleMin to idleMax. Once ctx ends it
// claims nothing more, hands back what it had claimed and not started
// (their attempts unused, as a slice does at its budget's end), lets the
// started handlers finish, and returns nil. At the ShutdownTimeout or on
// Abort the handlers still running see their contexts end with cause
// ErrStopped, and their items go back to the queue, their attempts
// unused, as a Snooze does; if some ignore it, Serve returns an error
// wrapping ErrStopped after stuckGrace and leaves them running. A crash
// (SIGKILL) loses nothing either: the leases expire and the next claim
// hands the items back.
func Serve(ctx context.Context, job recruiter.Job, cfg ServeConfig) error {
	j, ok := job.(*drainJob)
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	case !ok:
		return fmt.Errorf("%w: %T is not a drain", ErrInvalidArgument, job)
	case cfg.ShutdownTimeout < 0:
		return fmt.Errorf("%w: ShutdownTimeout %v is negative", ErrInvalidConfig, cfg.ShutdownTimeout)
	}
	j.dedicated = true
	served := make(chan struct{})
	defer close(served)
	hard, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	go func() {
		select {
		case <-served:
			return
		case <-ctx.Done():
		}
		var deadline <-chan time.Time
		if cfg.ShutdownTimeout > 0 {
			t := time.NewTimer(cfg.ShutdownTimeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-served:
			return
		case <-deadline:
		case <-cfg.Abort:
		}
		stop(ErrStopped)
	}()
	wake := make(chan struct{}, 1)
	defer j.Bell().Listen(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	sctx := context.WithValue(ctx, hardStopKey{}, hard)
	// The slices run on a goroutine of their own, so that a handler that
	// ignores its context's end cannot hold Serve past the deadline.
	looped := make(chan struct{})
	go func() {
		defer close(looped)
		serveSlices(ctx, sctx, j, cfg, wake)
	}()
	select {
	case <-looped:
		return nil
	case <-hard.Done():
	}
	// The handlers' contexts have ended: those that heed it return at once,
	// and their batches settle in a round trip or two.
	grace := stuckGrace + 2*j.cfg.RedisTimeout
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-looped:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: handlers ignored their contexts' end for %v; their tasks come back as their leases expire, each having used an attempt", ErrStopped, grace)
	}
}

// serveSlices runs the job's slices under sctx until ctx ends.
func serveSlices(ctx, sctx context.Context, j *drainJob, cfg ServeConfig, wake <-chan struct{}) {
	idle, backoff := idleMin, time.Duration(0)
	for ctx.Err() == nil {
		slice, end := context.WithTimeout(sctx, workSlice)
		rep, err := j.Run(slice)
		// A slice ended by its own deadline or by the shutdown says so;
		// that is no failure. A settle or hand-back that failed on the
		// way out is one: its tasks come back only as their leases expire.
		ended := onlyEnded(err, slice.Err())
		end()
		if err != nil && !ended {
			if cfg.OnError != nil {
				cfg.OnError(err)
			}
			backoff = min(max(2*backoff, idleMin), errorBackoffMax)
			sleep(ctx, backoff)
			continue
		}
		backoff = 0
		if rep.Items > 0 || rep.More {
			idle = idleMin
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
			idle = idleMin
		case <-time.After(idle):
			idle = min(2*idle, idleMax)
		}
	}
}

// onlyEnded reports whether err says nothing but end, the error of the
// slice's context: every error it joins is end. Redis calls have contexts
// of their own (RedisContext), so their failures are not end, unless a
// timeout of theirs is told at the slice's own deadline.
func onlyEnded(err, end error) bool {
	if end == nil || err == nil {
		return false
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if !onlyEnded(inner, end) {
				return false
			}
		}
		return true
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			return onlyEnded(inner, end)
		}
	}
	return err == end
}

// stuckGrace, with two Redis round trips, is how long Serve waits, once
// the handlers' contexts ended at its deadline, for the handlers to
// return and their batches to settle. A handler that ignores its
// context may never return: Serve returns anyway, and its task, like
// the rest of its batch, comes back when the lease expires.
const stuckGrace = 2 * time.Second

// A worker's slice: long enough that the handlers seldom wait at its end
// for the slowest of them, short enough that a new lease or Concurrency
// learnt takes hold soon.
const workSlice = 2 * time.Second

// The polls of an idle worker: its bell wakes it at once for enqueues in
// its own process, others' wait for a poll, at most idleMax (asynq polls
// every second).
const (
	idleMin         = 5 * time.Millisecond
	idleMax         = 100 * time.Millisecond
	errorBackoffMax = 2 * time.Second
)

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

type hardStopKey struct{}

// handlersContext is the context that a batch's handlers derive from: ctx
// without its end, and under Serve, ended by the shutdown's deadline with
// cause ErrStopped.
func handlersContext(ctx context.Context) (context.Context, func()) {
	base := context.WithoutCancel(ctx)
	hard, ok := ctx.Value(hardStopKey{}).(context.Context)
	if !ok {
		return base, func() {}
	}
	base, cancel := context.WithCancelCause(base)
	stop := context.AfterFunc(hard, func() { cancel(context.Cause(hard)) })
	return base, func() { stop(); cancel(nil) }
}

// HandBack is a handler's error as its item's settle takes it: once the
// worker's shutdown stopped the handler (ctx's cause is ErrStopped), a
// Snooze of no delay, so that the item goes back with its attempt unused.
func HandBack(ctx context.Context, err error) error {
	if err == nil || qstore.VerdictOf(err) != nil || !errors.Is(context.Cause(ctx), ErrStopped) {
		return err
	}
	return qstore.NewVerdict(qstore.Snooze, 0, fmt.Errorf("%w: %w", ErrStopped, err))
}
