package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/worksteal/worksteal/tasks"
)

// The roles of -role.
const (
	roleWeb    = "web"    // the servers; their cheap answers run the jobs
	roleWorker = "worker" // no server: a dedicated worker, and the jobs on the pace timer
	roleBoth   = "both"   // the servers, and a worker in the same process
)

// A worker's handlers at once, and how long the started ones may run on
// after SIGTERM: well below Kubernetes' default grace period (30 s),
// which must also cover the recruiter's slices and the exporters' flush.
const (
	workerConcurrency     = 32
	workerShutdownTimeout = 10 * time.Second
)

// runWorker is -role=worker: no server; Mux.Serve works the orders' queue
// off, and the recruiter carries the shop's other jobs on its pace timer
// (no request lends it time here), until ctx ends. Then Serve hands back
// what it had not started and lets the started finish (up to
// workerShutdownTimeout, or a second signal), the recruiter waits for its
// slices, and the final summary is printed.
func (a *app) runWorker(ctx context.Context, force *forcedStop, o options, out io.Writer) error {
	if err := a.registerJobs(a.meters, false); err != nil {
		return errors.Join(err, a.rec.Shutdown(ctx))
	}
	var names []string
	for _, j := range a.rec.Stats().Jobs {
		names = append(names, j.Name)
	}
	fmt.Fprintf(out, "worker: %d handlers on queue %q beside the web processes on this Redis, and the jobs %s on the recruiter's pace timer; no server\n",
		workerConcurrency, ordersQueue, strings.Join(names, ", "))

	failed := make(chan error, 1)
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		if err := a.work(ctx, a.mux, force); err != nil {
			failed <- err
		}
	}()
	err := a.report(ctx, failed, out, o.summaryEvery)
	<-worked
	select {
	case werr := <-failed:
		err = errors.Join(err, werr)
	default:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = errors.Join(err, a.rec.Shutdown(sctx))
	fmt.Fprintln(out, a.summary(sctx, "final"))
	return err
}

// work runs mux as a dedicated worker on the orders' queue until ctx has
// ended and its handlers are done, then tells force that no task of its
// is left to hand back.
func (a *app) work(ctx context.Context, mux *tasks.Mux, force *forcedStop) error {
	defer force.workersDone()
	a.logger.InfoContext(ctx, "worker: serving", "queue", ordersQueue, "concurrency", workerConcurrency, "shutdown_timeout", workerShutdownTimeout)
	err := mux.Serve(ctx, a.orders, tasks.WorkerConfig{
		Concurrency:     workerConcurrency,
		ShutdownTimeout: workerShutdownTimeout,
		Abort:           force.abort,
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	a.logger.InfoContext(context.WithoutCancel(ctx), "worker: stopped", "queue", ordersQueue)
	return nil
}
