package recruiter

import (
	"sync/atomic"
	"time"
)

// entry is a registered job with its local state. Its fields are set once
// at registration; the atomics are what draws and slices share.
type entry struct {
	job  Job
	name string
	cfg  JobConfig
	lock jobLock

	share       floatBox     // of the roll: Rate, or the automatic pace's share after reshare
	coolUntil   atomic.Int64 // unix ns before which this process does not ask Redis; 0 if never
	lastAttempt atomic.Int64 // unix ns of the last slice attempt, for the idle fallback
	backlog     atomic.Bool  // the last slice here reported More: the idle fallback continues it
	running     atomic.Bool  // a slice of this job is under way in this process
	_           [64]byte     // keep the fields every draw reads off the counters' lines
	pausedUntil atomic.Int64 // unix ns until which the job is paused, as last learnt; 0 if not
	pace        pace         // automatic pace: when this process visits the job's lock
	stats       jobStats

	pressurePassed atomic.Int64 // unix ns the job last passed the pressure gate here, or was first held; 0 if neither
}

// newEntry takes the name validated at registration: Name is called once.
func newEntry(job Job, name string, cfg JobConfig, prefix string, now time.Time) *entry {
	e := &entry{
		job:  job,
		name: name,
		cfg:  cfg,
		lock: newJobLock(prefix, name, cfg),
	}
	e.share.Store(cfg.Rate) // reshare gives automatic jobs theirs
	e.pace.planned.Store(now.UnixNano())
	e.lastAttempt.Store(now.UnixNano())
	e.stats.durations.init()
	return e
}

// coolingOff reports whether this process has learnt that the job cannot
// run before some later time (its lock is held elsewhere, it is in its
// cluster-wide cooldown, or it has just run here).
func (e *entry) coolingOff(now time.Time) bool {
	return now.UnixNano() < e.coolUntil.Load()
}

// coolOff makes this process leave e alone until then; the zero time ends
// a cool-off.
func (e *entry) coolOff(until time.Time) {
	if until.IsZero() {
		e.coolUntil.Store(0)
		return
	}
	e.coolUntil.Store(until.UnixNano())
}

// breaker stops recruitment from touching Redis after threshold consecutive
// failures, for cooldown; then a single slice probes, and its success
// closes the breaker again.
type breaker struct {
	threshold int32
	cooldown  time.Duration

	failures  atomic.Int32
	openUntil atomic.Int64 // unix ns; 0 when closed
	probing   atomic.Bool
}

// allows is the draw's cheap check: closed, or open but ready for a probe.
func (b *breaker) allows(now time.Time) bool {
	until := b.openUntil.Load()
	return until == 0 || now.UnixNano() >= until && !b.probing.Load()
}

// admit lets a slice through: always when closed; when the cooldown has
// passed, exactly one slice, the probe.
func (b *breaker) admit(now time.Time) bool {
	until := b.openUntil.Load()
	if until == 0 {
		return true
	}
	return now.UnixNano() >= until && b.probing.CompareAndSwap(false, true)
}

// succeed records a Redis call that worked.
func (b *breaker) succeed() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
	}
	b.probing.Store(false)
}

// fail records a Redis call that failed and reports whether it opened the
// breaker (a failed probe re-opens it at once).
func (b *breaker) fail(now time.Time) (opened bool) {
	n := b.failures.Add(1)
	if !b.probing.Load() && n < b.threshold {
		return false
	}
	b.openUntil.Store(now.Add(b.cooldown).UnixNano())
	b.probing.Store(false)
	return true
}

func (b *breaker) isOpen() bool { return b.openUntil.Load() != 0 }
