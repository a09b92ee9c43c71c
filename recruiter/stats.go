package recruiter

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/internal/ring"
)

// Stats is a snapshot of a recruiter's counters since [New], and of its
// most recent recruitments.
type Stats struct {
	BreakerOpen bool          // recruitment is keeping away from Redis
	Hanging     int           // hung slices that have not returned yet; they hold their jobs, not slots
	Misuses     uint64        // calls refused as programming errors (a nil context), logged once
	InFlight    int           // slices running now
	Jobs        []JobStats    // in registration order
	Recent      []Recruitment // the latest recruitments, newest first

	// EvictionPolicy is the Redis server's maxmemory-policy as the
	// recruiter last read it (at start-up, then every few minutes); ""
	// until read, or if the server refused to say.
	EvictionPolicy string
	// EvictionRisk says, in a sentence, what that policy may evict of
	// worksteal's keys, and what to set instead; "" when nothing is at
	// risk (noeviction) or the policy is unknown.
	EvictionRisk string
}

// JobStats counts one job's draws and their outcomes in this process.
// Every recruitment has one outcome: Ran, SkippedLocked, SkippedCooldown,
// SkippedPaused, Errors, Timeouts, Panics or Hung. Drawn counts the rolls that picked the job;
// SkippedGate those of them (and of the pace timer's attempts) that
// never reached Redis: cooling off locally, a slice of the job already
// running here, the process busy (Pressured), breaker open, no free slot,
// shut down. Drawn requests that were not fast exits, or that a middleware
// filter excluded, have no outcome; the pace timer's slices (Timed) have
// an outcome but no draw.
type JobStats struct {
	Name      string
	Automatic bool    // paced by the recruiter: Every without Rate
	Rate      float64 // the job's share of enlistments now: its Rate, or what automatic pace set
	Budget    time.Duration
	Every     time.Duration
	// Schedule is the job's cron schedule ([JobConfig].Schedule); "" for
	// a job with Every or Rate. NextTick is the tick this process will
	// visit next (zero without a schedule), and Late how long after its
	// tick, on Redis's clock, the last run here began.
	Schedule string
	NextTick time.Time
	Late     time.Duration
	// Fleet is, under automatic pace, the number of processes visiting
	// the job as this process last learnt it (from the count its visits
	// to the job's lock carry); 0 until learnt, and for a fixed Rate.
	Fleet float64
	// PausedUntil is when the job's pause ends, as this process last
	// learnt it (from its visits to the job's lock, or its own Pause);
	// zero if not paused.
	PausedUntil time.Time

	Drawn uint64
	// Timed counts the slices that this process's pace timer started
	// because no enlistment came in time (a quiet process): they have an
	// outcome but no draw, so Ran may exceed Drawn.
	Timed uint64
	// Woken counts the slices that an enqueue into the job's queue in
	// this process asked for (jobs.Drain, a Mux's job), started by the
	// pace timer at once rather than at the planned visit.
	Woken           uint64
	Ran             uint64
	SkippedLocked   uint64
	SkippedCooldown uint64
	SkippedPaused   uint64
	SkippedGate     uint64
	Errors          uint64
	Timeouts        uint64
	Panics          uint64
	Hung            uint64

	// Pressured counts the slices that the pressure gate held back
	// because this process was busy ([Config.Pressure]); they are part of
	// SkippedGate. The job is drawn again later: nothing is lost.
	Pressured uint64

	Slices   uint64    // slices whose Run was called, whatever their outcome
	Items    uint64    // Report.Items summed
	LastRun  time.Time // end of the last slice; zero if none
	SliceP50 time.Duration
	SliceP99 time.Duration
	SliceMax time.Duration // over the last slices (up to 128)
}

// Skipped counts the draws that did not run a slice because the job was
// busy, resting or paused: locked elsewhere, in its cooldown, or gated
// locally. For a job with Every, most of these are expected.
func (js JobStats) Skipped() uint64 {
	return js.SkippedLocked + js.SkippedCooldown + js.SkippedPaused + js.SkippedGate
}

// Paused reports whether the job was paused at now, as this process last
// learnt it.
func (js JobStats) Paused(now time.Time) bool { return now.Before(js.PausedUntil) }

// Failed counts the recruitments that ended badly: errors, timeouts,
// panics, hung slices.
func (js JobStats) Failed() uint64 { return js.Errors + js.Timeouts + js.Panics + js.Hung }

// Recruitment is one recruitment as the recruiter recorded it.
type Recruitment struct {
	End      time.Time
	Job      string
	Outcome  Outcome
	Items    int
	More     bool
	Duration time.Duration // of the job's Run; zero if it did not run
	TraceID  string        // of the recruitment span; empty without a recording tracer
	Error    string        // the cause of an error, timeout or panic
}

// Stats returns the recruiter's counters.
func (r *Recruiter) Stats() Stats {
	jobs := r.jobs.Load()
	s := Stats{
		BreakerOpen: r.breaker.isOpen(),
		InFlight:    int(r.inFlight.Load()),
		Hanging:     int(r.hanging.Load()),
		Misuses:     r.misuses.Load(),
		Jobs:        make([]JobStats, 0, len(jobs.entries)),
		Recent:      r.tel.recent.list(),
	}
	ev := r.evictionState()
	s.EvictionPolicy, s.EvictionRisk = ev.policy, ev.risk
	for _, e := range jobs.entries {
		s.Jobs = append(s.Jobs, e.stats.snapshot(e))
	}
	return s
}

// fleet is the number of processes visiting e as this process last
// learnt it: automatic pace and schedules; 0 until learnt, and for a
// fixed Rate.
func (e *entry) fleet() float64 { return e.mode.fleet(e) }

type jobStats struct {
	gatedAtDraw atomic.Uint64 // the one counter of the draw's hot path, on a line of its own
	windowEnd   atomic.Uint64 // automatic pace: gatedAtDraw at which a window of dismissed draws ends (see pace); never for a fixed rate
	_           [48]byte

	admitted   atomic.Uint64 // draws that passed the gates
	timed      atomic.Uint64 // slices the pace timer started, without a draw
	woken      atomic.Uint64 // slices an enqueue here asked for
	gatedLater atomic.Uint64 // admitted, then gated when the slice was to start

	ran, skippedLocked, skippedCooldown, skippedPaused atomic.Uint64
	errors, timeouts, panics, hung                     atomic.Uint64
	slices, items                                      atomic.Uint64
	lastRun                                            atomic.Int64 // unix ns
	lastOK                                             atomic.Int64 // unix ns of the last slice that ran without error
	durations                                          durationRing

	pressured atomic.Uint64 // held back by the pressure gate; also in gatedLater

	registered int64 // unix ns the job was registered in this process; set by init
}

// init readies s for a job registered at now.
func (s *jobStats) init(now time.Time) {
	s.registered = now.UnixNano()
	s.durations.init()
}

func (s *jobStats) record(res result, now time.Time) {
	switch res.Outcome {
	case OutcomeRan:
		s.ran.Add(1)
		s.lastOK.Store(now.UnixNano())
	case OutcomeSkippedLocked:
		s.skippedLocked.Add(1)
	case OutcomeSkippedCooldown:
		s.skippedCooldown.Add(1)
	case OutcomeSkippedPaused:
		s.skippedPaused.Add(1)
	case OutcomeError:
		s.errors.Add(1)
	case OutcomeTimeout:
		s.timeouts.Add(1)
	case OutcomePanic:
		s.panics.Add(1)
	case OutcomeHung:
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
		Name: e.name, Rate: e.share.Load(), Budget: e.cfg.Budget, Every: e.cfg.Every,
		Drawn:           s.admitted.Load() + s.gatedAtDraw.Load(),
		Timed:           s.timed.Load(),
		Woken:           s.woken.Load(),
		Ran:             s.ran.Load(),
		SkippedLocked:   s.skippedLocked.Load(),
		SkippedCooldown: s.skippedCooldown.Load(),
		SkippedPaused:   s.skippedPaused.Load(),
		SkippedGate:     s.gatedAtDraw.Load() + s.gatedLater.Load(),
		Errors:          s.errors.Load(),
		Timeouts:        s.timeouts.Load(),
		Panics:          s.panics.Load(),
		Hung:            s.hung.Load(),
		Slices:          s.slices.Load(),
		Items:           s.items.Load(),
	}
	js.Pressured = s.pressured.Load()
	js.Fleet = e.fleet()
	switch t := e.mode.(type) {
	case *pace:
		js.Automatic = true
	case *ticks:
		js.Schedule, js.Late = t.sched.String(), time.Duration(t.late.Load())
		if ms := t.want.Load(); ms != 0 {
			js.NextTick = time.UnixMilli(ms)
		}
	}
	if ns := e.pausedUntil.Load(); ns != 0 {
		js.PausedUntil = time.Unix(0, ns)
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
	last *ring.Ring[time.Duration]
}

const durationRingSize = 128

func (d *durationRing) init() { d.last = ring.New[time.Duration](durationRingSize) }

func (d *durationRing) add(v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last.Add(v)
}

func (d *durationRing) quantiles() (p50, p99, maxDur time.Duration) {
	d.mu.Lock()
	sorted := d.last.Slice()
	d.mu.Unlock()
	n := len(sorted)
	if n == 0 {
		return 0, 0, 0
	}
	slices.Sort(sorted)
	return sorted[(n-1)*50/100], sorted[(n-1)*99/100], sorted[n-1]
}
