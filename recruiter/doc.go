// Package recruiter turns web servers into their own maintenance crew.
//
// After a request that was cheap to answer (a cache hit, an empty result,
// a 304), the server may be recruited for one small, time-bounded slice of
// background work. A [Recruiter] holds [Job]s, each with a rate; every
// enlistment rolls once against the cumulative rates and either picks one
// job (recruited) or none (dismissed).
//
//	r, err := recruiter.New(rdb, recruiter.Config{})
//	err = r.Register(recruiter.Func("reindex", reindex), recruiter.JobConfig{Every: time.Minute})
//	// in a handler, after a fast exit:
//	r.Enlist(ctx)
//	// at exit:
//	err = r.Shutdown(ctx)
//
// # The hot path
//
// Middleware uses the two-step form, the one protocol of every adapter:
// [Recruiter.Draw] before the handler; for a drawn request, [Draw.Context]
// gives the handler a context on which [MarkFastExit] is recorded, and
// after the handler [Draw.Enlist] hands the slice on if the response was a
// fast exit, with a flush hook for inline mode. A dismissed draw costs
// nanoseconds, allocates nothing and never touches Redis.
//
// # Gates, lock and budget
//
// A drawn job runs only if this process can run it now: it is not cooling
// off locally (after finding its lock held, or after running it), the
// circuit breaker is closed, and one of [Config.MaxConcurrent] slots is
// free; otherwise the draw is dismissed, never queued. Just before Redis,
// a slice is held back while its process is busy ([Config.Pressure]), to
// be drawn again later. The slice then takes
// the job's Redis lock ({prefix}:lock:{job}, one script call), without
// retry: a lock held elsewhere means "skipped", never "wait". The slice's
// context ends at [JobConfig.Budget], before the lock expires (budget +
// max(budget/2, 250ms)). After the slice, a [Report] with More releases
// the lock at once so that a later recruit continues the backlog (under
// automatic pace, sooner with each such slice); otherwise, with
// [JobConfig.Every], the key stays as a cluster-wide cooldown; without
// it, the lock is released. A slice that overruns keeps its lock
// alive while it runs; one still running at twice the lock's TTL is hung:
// its slot is freed, and its job stays taken until it returns.
//
// # Start-up
//
// [New] does not dial Redis. A service calls [Recruiter.Check] at
// start-up and logs its error, which names each problem: no connection
// (the address and the dial's or the server's error), a command or script
// the ACL user may not run, an evicting maxmemory-policy. It must not
// gate the service's readiness on it, nor on Redis: stolen work is
// optional, and a Redis outage must not take the fleet out of its load
// balancer. Afterwards the breaker says whether Redis answers
// ([Stats].BreakerOpen, the worksteal.breaker.open metric, the dashboard).
//
// # Execution
//
// Slices run in the background by default (the caller returns at once,
// and the slice starts once the request's context ends), or inline with
// [Config.Inline]. They run on context.WithoutCancel of the
// enlisting context, carry their own span (see package telemetry), and
// their errors and panics are logged and counted, never returned.
// [Recruiter.Shutdown] stops recruiting and waits for slices in flight.
package recruiter
