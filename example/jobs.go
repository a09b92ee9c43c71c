package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// seedStale is how many orders the seed leaves in stale leases, as a
// crashed worker would.
const seedStale = 12

// depthEvery is how often, fleet-wide, depth.orders reads the queue's
// depth for the metrics; depthMaxAge how long a process reports its
// reading.
const (
	depthEvery  = 5 * time.Second
	depthMaxAge = 15 * time.Second
)

// registerJobs gives the recruiter the shop's chores. With orders, the
// tasks job runs the orders' steps in stolen time (each a queue item:
// reserve, then charge, then confirm), and its claims also bring back due
// retries and a crashed worker's expired leases, so the queue needs no
// other job; a worker (-role=worker) passes false, its Mux.Serve doing
// all of that. Each chore runs at most once per Every across all the
// processes sharing the Redis, and sooner again while a backlog remains,
// on the pace timer when no request lends its time: a worker without
// traffic carries them too. depth.orders reads the queue's depth for the
// metrics (meters), one process at a time. Last, the scheduled jobs
// (schedules.go).
func (a *app) registerJobs(meters metric.MeterProvider, orders bool) error {
	// One bounded batch a slice, so that the dashboard shows slices come
	// and go; a full batch reports More and the next recruit continues.
	evict, err := jobs.EvictExpired(a.sessions, jobs.EvictConfig{Batching: jobs.Batching{Batch: evictBatch, MaxBatches: 1, Name: "evict.sessions"}})
	if err != nil {
		return err
	}
	// Reported for 15s after each reading: about three readings' worth,
	// so that some process always reports one.
	depth, err := jobs.QueueDepth(a.orders, jobs.DepthConfig{MaxAge: depthMaxAge, MeterProvider: meters})
	if err != nil {
		return err
	}
	// Every alone: the recruiter paces each job, whatever the traffic.
	errs := []error{a.rec.Register(depth, recruiter.JobConfig{Every: depthEvery})}
	if orders {
		drain, err := a.mux.Job(a.orders, jobs.DrainConfig{Batching: jobs.Batching{Batch: 50}})
		if err != nil {
			return err
		}
		errs = append(errs, a.rec.Register(drain, recruiter.JobConfig{Budget: 100 * time.Millisecond, Every: 500 * time.Millisecond}))
	}
	return errors.Join(append(errs,
		a.rec.Register(evict, recruiter.JobConfig{Every: time.Second}),
		a.rec.Register(recruiter.Func("refresh-popular", a.refreshPopular),
			recruiter.JobConfig{Budget: 100 * time.Millisecond, Every: 2 * time.Second}),
		a.registerSchedules(),
	)...)
}

// seed gives every job work within seconds of the start: orders whose
// worker "crashed" holding their first steps' leases (the tasks job hands
// them back and runs them; two of them fail their send once, and are
// retried), and expired sessions (evict).
func (a *app) seed(ctx context.Context, out io.Writer) error {
	for i := range seedStale {
		if _, err := a.enqueueOrder(ctx, order{Customer: fmt.Sprintf("seed-%02d", i), ItemID: i, Quantity: 1, Seq: int64(i)}); err != nil {
			return err
		}
	}
	// A worker with a 1ms lease claims them and never settles them.
	crashed, err := queue.New(a.rdb, ordersQueue, queue.Config{Lease: time.Millisecond})
	if err != nil {
		return err
	}
	abandoned, err := crashed.Claim(ctx, seedStale)
	if err != nil {
		return err
	}
	a.orderSeq.Store(seedStale)
	if err := a.seedSessions(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded %d stale leases in queue %q and %d expired sessions (plus %d live) in %q\n",
		len(abandoned), ordersQueue, seedExpired, seedLive, sessionsKey)
	return nil
}
