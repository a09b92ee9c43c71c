package recruiter

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/telemetry"
)

// Stats is a snapshot of a recruiter's counters since [New] and of its
// latest recruitments; see [telemetry.Stats].
type Stats = telemetry.Stats

// JobStats counts one job's draws and their outcomes in this process; see
// [telemetry.JobStats].
type JobStats = telemetry.JobStats

// Stats returns the recruiter's counters.
func (r *Recruiter) Stats() Stats {
	jobs := r.jobs.Load()
	s := Stats{
		BreakerOpen: r.breaker.isOpen(),
		InFlight:    int(r.inFlight.Load()),
		Hanging:     int(r.hanging.Load()),
		Misuses:     r.misuses.Load(),
		Jobs:        make([]JobStats, 0, len(jobs.entries)),
		Recent:      r.tel.Recent(),
	}
	for _, e := range jobs.entries {
		s.Jobs = append(s.Jobs, e.stats.snapshot(e))
	}
	return s
}

type jobStats struct {
	gatedAtDraw atomic.Uint64 // the one counter of the draw's hot path, on a line of its own
	_           [56]byte

	admitted   atomic.Uint64 // draws that passed the gates
	gatedLater atomic.Uint64 // admitted, then gated when the slice was to start

	ran, skippedLocked, skippedCooldown atomic.Uint64
	errors, timeouts, panics, hung      atomic.Uint64
	slices, items                       atomic.Uint64
	lastRun                             atomic.Int64 // unix ns
	durations                           durationRing
}

func (s *jobStats) record(res telemetry.Result, now time.Time) {
	switch res.Outcome {
	case telemetry.OutcomeRan:
		s.ran.Add(1)
	case telemetry.OutcomeSkippedLocked:
		s.skippedLocked.Add(1)
	case telemetry.OutcomeSkippedCooldown:
		s.skippedCooldown.Add(1)
	case telemetry.OutcomeError:
		s.errors.Add(1)
	case telemetry.OutcomeTimeout:
		s.timeouts.Add(1)
	case telemetry.OutcomePanic:
		s.panics.Add(1)
	case telemetry.OutcomeHung:
		s.hung.Add(1)
	}
	if res.Ran {
		s.slices.Add(1)
		s.items.Add(uint64(max(res.Items, 0)))
		s.lastRun.Store(now.UnixNano())
		s.durations.add(res.Duration)
	}
}

func (s *jobStats) snapshot(e *entry) JobStats {
	js := JobStats{
		Name: e.name, Rate: e.cfg.Rate, Budget: e.cfg.Budget, Every: e.cfg.Every,
		Drawn:           s.admitted.Load() + s.gatedAtDraw.Load(),
		Ran:             s.ran.Load(),
		SkippedLocked:   s.skippedLocked.Load(),
		SkippedCooldown: s.skippedCooldown.Load(),
		SkippedGate:     s.gatedAtDraw.Load() + s.gatedLater.Load(),
		Errors:          s.errors.Load(),
		Timeouts:        s.timeouts.Load(),
		Panics:          s.panics.Load(),
		Hung:            s.hung.Load(),
		Slices:          s.slices.Load(),
		Items:           s.items.Load(),
	}
	if ns := s.lastRun.Load(); ns != 0 {
		js.LastRun = time.Unix(0, ns)
	}
	js.SliceP50, js.SliceP99, js.SliceMax = s.durations.quantiles()
	return js
}

// durationRing keeps the last slice durations for quantiles; slices are
// rare next to requests, so a mutex is fine here.
type durationRing struct {
	mu   sync.Mutex
	buf  []time.Duration
	next int
	full bool
}

const durationRingSize = 128

func (d *durationRing) init() { d.buf = make([]time.Duration, durationRingSize) }

func (d *durationRing) add(v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf[d.next] = v
	d.next = (d.next + 1) % len(d.buf)
	d.full = d.full || d.next == 0
}

func (d *durationRing) quantiles() (p50, p99, maxDur time.Duration) {
	d.mu.Lock()
	n := d.next
	if d.full {
		n = len(d.buf)
	}
	sorted := slices.Clone(d.buf[:n])
	d.mu.Unlock()
	if n == 0 {
		return 0, 0, 0
	}
	slices.Sort(sorted)
	return sorted[(n-1)*50/100], sorted[(n-1)*99/100], sorted[n-1]
}
