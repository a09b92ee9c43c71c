package recruiter

import (
	"math"
	"math/rand/v2"
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
	// finish is how long past its budget a slice may finish what it
	// started ([Finisher]); 0 for most jobs.
	finish time.Duration

	mode        mode         // how its runs are planned: *pace, fixedRate or *ticks (mode.go)
	share       floatBox     // of the roll: Rate, or the automatic pace's share after reshare; none for a schedule
	coolUntil   atomic.Int64 // unix ns before which this process does not ask Redis; 0 if never
	timerAgain  atomic.Int64 // unix ns before which the pace timer does not start the job again
	running     atomic.Bool  // a slice of this job is under way in this process
	_           [64]byte     // keep the fields every draw reads off the counters' lines
	pausedUntil atomic.Int64 // unix ns until which the job is paused, as last learnt; 0 if not
	woken       atomic.Bool  // an enqueue here rang the job's bell: visit soon (wake.go)
	wakeAt      atomic.Int64 // unix ns before which no woken visit starts
	unlisten    func()       // stops hearing the bell; nil without one
	stats       jobStats

	pressurePassed atomic.Int64 // unix ns the job last passed the pressure gate here, or was first held; 0 if neither
}

// newEntry takes the name validated at registration: Name is called once.
func newEntry(job Job, name string, cfg JobConfig, rcfg Config, now time.Time) *entry {
	e := &entry{
		job:  job,
		name: name,
		cfg:  cfg,
		lock: newJobLock(rcfg.Prefix, name, cfg),
		mode: newMode(name, cfg, rcfg, now),
	}
	if f, ok := job.(Finisher); ok {
		e.finish = min(max(f.Finish(), 0), finishMax)
	}
	e.share.Store(cfg.Rate)       // reshare gives automatic jobs theirs
	end := uint64(math.MaxUint64) // only automatic pace counts windows
	switch m := e.mode.(type) {
	case *pace:
		end = rateWindow
	case *ticks:
		e.coolOff(m.plan(now, 0))
	}
	e.stats.windowEnd.Store(end)
	e.stats.init(now)
	return e
}

// finishMax bounds a Finisher's Finish: a slice that holds a process's
// slot longer is hung.
const finishMax = 10 * time.Minute

// due is how long a slice may take before it overruns: its budget, and
// the finishing time of a Finisher.
func (e *entry) due() time.Duration { return e.cfg.Budget + e.finish }

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

// learnPause takes in what an acquire said of the job's pause.
func (e *entry) learnPause(g grant, now time.Time) {
	if g.state == lockPaused {
		e.pausedUntil.Store(now.Add(g.wait).UnixNano())
	} else {
		e.pausedUntil.Store(0)
	}
}

// holdOff is how long the acquire says this process cannot run the job,
// so that it asks Redis again only when it could succeed.
func (e *entry) holdOff(g grant) time.Duration {
	switch {
	case g.state == lockTaken:
		return g.left // automatic pace: the slot's run is ours (0 under the other modes)
	case g.wait < 0:
		// A lock without expiry, of an earlier version: not ours to judge;
		// ask again after the longer of a lock's life and Every.
		return max(e.lock.ttl, e.cfg.Every)
	case g.state == lockPaused:
		return min(g.wait, e.pauseRecheck(g.left))
	case g.state == lockRunning:
		// A running slice ends at its budget, a margin before its lock
		// expires; past that it overruns, and the lock's expiry is the bound.
		if wait := g.wait - (e.lock.ttl - e.cfg.Budget); wait > 0 {
			return wait
		}
	}
	return g.wait
}

// pauseRecheck is how long a process that found e paused stays away before
// it asks again: until the slot ends (left, under automatic pace), one
// Every, or pauseRecheck.
func (e *entry) pauseRecheck(left time.Duration) time.Duration {
	switch {
	case left > 0:
		return left
	case e.cfg.Every > 0:
		return e.cfg.Every
	}
	return pauseRecheck
}

// windowEnded takes in a window of rateWindow dismissed draws of an
// automatically paced job, which ended now at the n-th: a rate rateJump
// times the usual one or more brings the next visit forward. One draw
// takes it in.
func (e *entry) windowEnded(n uint64, now time.Time) {
	p, ok := e.mode.(*pace)
	end := e.stats.windowEnd.Load()
	if !ok || n < end || !e.stats.windowEnd.CompareAndSwap(end, math.MaxUint64) {
		return
	}
	defer e.stats.windowEnd.Store(n + rateWindow)
	elapsed := now.UnixNano() - p.windowStart.Swap(now.UnixNano())
	rate := rateWindow / float64(elapsed)
	learnt := float64(p.gapMean.Load()) / float64(e.cfg.Every) * visitsPerSlot
	switch old := p.rate.Load(); {
	case end == rateWindow || elapsed <= 0:
		// The first window began at registration, before any traffic:
		// it sets no usual rate.
	case old == 0:
		p.rate.Store(rate)
	case rate < rateJump*old:
		p.rate.Store(old + (rate-old)/4)
	case learnt == 0:
		p.rate.Store(rate) // no fleet's size learnt yet to guess from
	default:
		// The fleet's traffic, as this process saw it before the jump
		// (kept through the jumps of one guess), over its share now.
		if now.UnixNano() >= p.guessUntil.Load() {
			p.traffic.Store(learnt * old)
			p.learnt.Store(learnt)
			p.jumped.Store(now.UnixNano())
		}
		p.guessUntil.Store(now.Add(guessSlots * e.cfg.Every).UnixNano())
		p.rate.Store(rate)
		e.replan(p, now)
	}
}

// replan plans this process's visits from the fleet's size that its
// traffic implies: its next visit is the sooner of the planned one and a
// fresh draw from now. Only while the job cools off for a random visit:
// not while a slice runs here (it plans anew), nor paused, nor in a
// backlog, nor held off by the lock past the plan.
func (e *entry) replan(p *pace, now time.Time) {
	planned, fleet := p.planned.Load(), p.guess(now)
	if fleet == 0 || e.running.Load() || p.continuing.Load() || e.pausedUntil.Load() != 0 || p.successor() ||
		p.floor.Load() >= planned || e.coolUntil.Load() != planned {
		return
	}
	mean, old := fleet/visitsPerSlot*float64(e.cfg.Every), float64(p.interval.Load())
	if mean >= old {
		return
	}
	next := min(max(now.Add(time.Duration(rand.ExpFloat64()*mean)).UnixNano(), p.floor.Load()), planned)
	if e.coolUntil.CompareAndSwap(planned, next) {
		// Two plans at once, of means old and mean: the visit comes at
		// the sooner, as often as both together, and weighs that.
		p.interval.Store(int64(old * mean / (old + mean)))
		p.gapMean.Store(int64(mean))
		p.planned.Store(next)
	}
}
