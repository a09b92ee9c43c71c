package recruiter

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/internal/registry"
)

// The registry (internal/registry) lists a fleet's jobs, queues and task
// types for operators' tools. A recruiter writes it from its pace timer,
// never on a caller's path: Register has no context and must not wait on
// Redis, and the first write comes only once a slice has reached Redis.

// registryState is what a recruiter wrote to the registry.
type registryState struct {
	written atomic.Pointer[roster] // the roster last written
	retryAt atomic.Int64           // unix ns before which no write is tried again after one failed
}

// registryRetry spaces the writes after one failed (an ACL grant without
// the registry's keys, Redis down), so that the timer does not spend a
// round trip on each of its wakes.
const registryRetry = time.Minute

// writeRegistry writes the jobs if the roster changed since the last
// write, and the notes of queues and task types made with r's client. It
// runs on the pace timer, skips while the breaker is open, and after a
// failure (logged at debug level) waits registryRetry.
func (r *Recruiter) writeRegistry() {
	ros := r.jobs.Load()
	changed := r.registry.written.Load() != ros
	if !changed && !registry.Pending(r.rdb) || r.breaker.isOpen() || time.Now().UnixNano() < r.registry.retryAt.Load() {
		return
	}
	var jobs []registry.Job
	if changed {
		for _, e := range ros.entries {
			jobs = append(jobs, registry.Job{Name: e.name, BudgetMS: e.cfg.Budget.Milliseconds(),
				EveryMS: e.cfg.Every.Milliseconds(), Rate: e.cfg.Rate, Schedule: e.cfg.Schedule})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	if err := registry.Write(ctx, r.rdb, r.cfg.Prefix, jobs); err != nil {
		r.registry.retryAt.Store(time.Now().Add(registryRetry).UnixNano())
		r.cfg.Logger.Debug("worksteal: could not write the registry", slog.Any("error", err))
		return
	}
	r.registry.written.Store(ros)
}
