package recruiter

import (
	"context"
	"time"
)

// The pace timer makes a schedule's visits, at its ticks, and the visits
// that automatic pace planned when no enlistment came in time, so that a
// quiet process, or a fleet without fast exits, still runs its jobs about
// once per Every at the same round trips per run: the plan, not the
// traffic, sets when a process visits; traffic only makes the visit on a
// request's time, a little earlier. One goroutine per recruiter serves
// every job, asleep until the next plan is due; it also reads the
// server's eviction policy (eviction.go) once a slice has reached Redis,
// so that New and Register never call it. Jobs with a fixed Rate are a
// share of enlistments: without traffic they do not run.

// timerGraceMax bounds how long past a planned visit the timer waits for
// an enlistment to make it.
const timerGraceMax = time.Second

// timerRetry is how soon the timer looks again at a job that is due but
// cannot start here now (its slice or every slot busy, the breaker open);
// a slice's end wakes it sooner.
const timerRetry = 100 * time.Millisecond

// timerSleepMax bounds one sleep of the timer, so that a clock that jumps
// and the eviction policy's recheck are both seen.
const timerSleepMax = 5 * time.Second

// timerLoop runs until Shutdown.
func (r *Recruiter) timerLoop() {
	defer r.slices.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var nextCheck time.Time
	for {
		select {
		case <-r.stop:
			return
		case <-timer.C:
		case <-r.wake:
		}
		if r.reachedRedis.Load() {
			r.writeRegistry()
		}
		// The policy's recheck is on the real clock, not the tests' hook.
		if wall := time.Now(); r.reachedRedis.Load() && !wall.Before(nextCheck) {
			r.checkEviction()
			nextCheck = wall.Add(evictionRecheck)
		}
		sleep := timerSleepMax
		if !r.cfg.TrafficOnly {
			sleep = r.visitDue(r.now())
		}
		timer.Reset(max(sleep, time.Millisecond))
	}
}

// visitDue starts a slice of each job whose planned visit is due (mode's
// timerDue), and returns how long until the next one is.
func (r *Recruiter) visitDue(now time.Time) time.Duration {
	sleep := timerSleepMax
	for _, e := range r.jobs.Load().entries {
		if e.woken.Load() {
			started, wait := r.visitWoken(e, now)
			sleep = min(sleep, wait)
			if started {
				continue
			}
		}
		// A slice the timer started that a gate held back (the process
		// busy, the breaker open) left the plan as it was: the job is due
		// again at once, so it waits timerRetry before the next try.
		due, planned := e.mode.timerDue(e, time.Unix(0, e.timerAgain.Load()))
		if !planned {
			continue
		}
		if wait := due.Sub(now); wait > 0 {
			sleep = min(sleep, wait)
			continue
		}
		// A tick held back here past tickHoldMax (every slot busy) takes
		// the spare slot: another process may not visit it.
		spare := e.tickOverdue(now)
		if !r.open(e, spare) {
			sleep = min(sleep, timerRetry)
			continue
		}
		e.stats.timed.Add(1)
		e.timerAgain.Store(now.Add(timerRetry).UnixNano())
		r.start(context.Background(), e, launch{share: 1, spare: spare})
		sleep = min(sleep, timerRetry) // its end wakes the loop with the new plan
	}
	return sleep
}

// wakeTimer makes the timer look at the plans again: a slice ended, a job
// was registered. It never blocks.
func (r *Recruiter) wakeTimer() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
