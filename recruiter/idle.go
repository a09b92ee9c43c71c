package recruiter

import (
	"context"
	"time"
)

// idleLoop is the idle fallback: it enlists, on the recruiter's own
// behalf, each job that this process has not attempted for IdleFallback,
// and keeps at a job whose last slice here reported a backlog, through the
// same gates, lock and budget as any enlistment. It never runs on the
// request path, so it costs requests nothing.
func (r *Recruiter) idleLoop() {
	defer r.slices.Done()
	tick := time.NewTicker(max(r.cfg.IdleFallback/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		now := r.now()
		for _, e := range r.jobs.Load().entries {
			idle := now.Sub(time.Unix(0, e.lastAttempt.Load()))
			if (idle >= r.cfg.IdleFallback || e.backlog.Load()) && r.open(e) {
				r.start(context.Background(), e, 1, nil, false)
			}
		}
	}
}
