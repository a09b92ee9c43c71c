package recruiter

import (
	"cmp"
	"context"
	"time"

	"github.com/worksteal/worksteal/internal/wakeup"
)

// Local wake-up: a job that works a queue (jobs.Drain, a Mux's job) has
// the queue's bell, which this process's enqueues into the queue ring
// (and acks that enqueue a chain's next step). A ring marks the job
// woken, and the pace timer visits it at once instead of at its planned
// visit: the visit passes the cool-off, and may take the job's slot
// again once its run is taken, as a backlog's visits do. It still passes
// the pressure gate and the breaker, and skips when a slice of the job
// runs elsewhere or it is paused, coming back when that ends. Woken
// visits are bounded per process: at most 50 a second, or 32 per Every
// if Every is shorter than 640ms (wakeGap), after a burst of 4, so that Redis traffic stays
// bounded by time, not by enqueues; rings past the bound wait for the
// next allowed visit, and a slice running by then claims their items
// anyway. With TrafficOnly the timer makes no visit, woken or planned.

// wakeGapMax is the least time between two woken visits of a job in one
// process: at most 50 a second, whatever the enqueues.
const wakeGapMax = 20 * time.Millisecond

// wakeBurst is how many woken visits may come closer than wakeGap, as a
// caller's Call after Call does.
const wakeBurst = 4

// wakeGap is the least time between two woken visits of e here: an
// Every/32 if that is shorter than wakeGapMax (at least a millisecond).
func (e *entry) wakeGap() time.Duration {
	return min(max(cmp.Or(e.cfg.Every, time.Second)/32, time.Millisecond), wakeGapMax)
}

// listen makes e hear its queue's bell, if it has one, until Shutdown.
func (r *Recruiter) listen(e *entry) {
	ringer, ok := e.job.(wakeup.Ringer)
	if _, scheduled := e.mode.(*ticks); !ok || scheduled {
		return
	}
	bell := ringer.Bell()
	if bell == nil {
		return
	}
	e.unlisten = bell.Listen(func() {
		if !e.woken.Load() {
			e.woken.Store(true)
			r.wakeTimer()
		}
	})
}

// visitWoken starts a woken slice of e if its bound allows and it could
// run here now; it returns how soon to look again.
func (r *Recruiter) visitWoken(e *entry, now time.Time) (started bool, wait time.Duration) {
	// A burst of wakeBurst visits, then one per gap: the bound is the
	// rate's (a cell rate: wakeAt is when the visits so far would have
	// ended, spaced by the gap).
	gap := e.wakeGap()
	at := time.Unix(0, e.wakeAt.Load())
	if wait := at.Add(-wakeBurst * gap).Sub(now); wait > 0 {
		return false, wait
	}
	// Not open(): a woken visit passes the cool-off.
	if r.closed.Load() || e.running.Load() || r.inFlight.Load() >= r.slots(false) || !r.breaker.allows(now) {
		return false, timerRetry // a slice's end wakes the timer sooner
	}
	if at.Before(now) {
		at = now
	}
	e.wakeAt.Store(at.Add(gap).UnixNano())
	e.stats.woken.Add(1)
	r.start(context.Background(), e, launch{share: 1, woken: true})
	return true, timerRetry
}

// wokenVisited takes in what any visit learnt: taken, the rings so far
// are answered, since its claims will see their items (a ring from now
// on wakes the job again); running elsewhere or paused, the next woken
// visit waits until the process would ask Redis again anyway.
func (e *entry) wokenVisited(g grant, until time.Time) {
	switch g.state {
	case lockTaken:
		e.woken.Store(false)
	case lockRunning, lockPaused:
		if next := until.UnixNano(); next > e.wakeAt.Load() {
			e.wakeAt.Store(next)
		}
	}
}
