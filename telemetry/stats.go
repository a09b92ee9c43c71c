package telemetry

import "time"

// Stats is a snapshot of a recruiter's counters since it started, and of
// its most recent recruitments. The recruiter package names it
// recruiter.Stats; it lives here so that a [Dashboard] can show it.
type Stats struct {
	BreakerOpen bool          // recruitment is keeping away from Redis
	Hanging     int           // hung slices that have not returned yet; they hold their jobs, not slots
	Misuses     uint64        // calls refused as programming errors (a nil context), logged once
	InFlight    int           // slices running now
	Jobs        []JobStats    // in registration order
	Recent      []Recruitment // the latest recruitments, newest first
}

// JobStats counts one job's draws and their outcomes in this process.
// Every recruitment has one outcome: Ran, SkippedLocked, SkippedCooldown,
// Errors, Timeouts, Panics or Hung. Drawn counts the rolls that picked the job;
// SkippedGate those of them (and of the idle fallback's attempts) that
// never reached Redis: cooling off locally, a slice of the job already
// running here, breaker open, no free slot, shut down. Drawn requests that
// were not fast exits, or that a middleware filter excluded, have no
// outcome; idle-fallback slices have an outcome but no draw.
type JobStats struct {
	Name   string
	Rate   float64
	Budget time.Duration
	Every  time.Duration

	Drawn           uint64
	Ran             uint64
	SkippedLocked   uint64
	SkippedCooldown uint64
	SkippedGate     uint64
	Errors          uint64
	Timeouts        uint64
	Panics          uint64
	Hung            uint64

	Slices   uint64    // slices whose Run was called, whatever their outcome
	Items    uint64    // Report.Items summed
	LastRun  time.Time // end of the last slice; zero if none
	SliceP50 time.Duration
	SliceP99 time.Duration
	SliceMax time.Duration // over the last slices (up to 128)
}

// Skipped counts the draws that did not run a slice because the job was
// busy or resting: locked elsewhere, in its cooldown, or gated locally.
// For a job with Every, most of these are expected.
func (js JobStats) Skipped() uint64 { return js.SkippedLocked + js.SkippedCooldown + js.SkippedGate }

// Failed counts the recruitments that ended badly: errors, timeouts,
// panics, hung slices.
func (js JobStats) Failed() uint64 { return js.Errors + js.Timeouts + js.Panics + js.Hung }

// Recruitment is one recruitment as [Telemetry.End] recorded it.
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
