package recruiter

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/internal/schedule"
)

// A job with [JobConfig].Schedule runs once per tick of its cron
// schedule, fleet-wide. Ticks are instants on Redis's clock: each visit
// to the job's lock names the tick it would run, and the acquire script
// takes it only if no visit took it, or a later one, before, and only once
// Redis's clock has reached it. So every process agrees on the ticks,
// whatever its own clock says, and a tick runs at most once while Redis
// keeps its writes.
//
// Each process plans its visit at its next tick, a few milliseconds
// after it, and its pace timer makes it (with Config.TrafficOnly, the
// first enlistment after it): a tick starts within about a second at any
// traffic. A visit is one round trip;
// a process visits every tick whose gap is a minute or more (at most one
// round trip per process per tick), and of a denser schedule a share of
// the ticks, so that the fleet makes about tickVisits random visits a
// tick, as the pacer counts it, beside the carrier's: as under automatic
// pace (pace.go), the oldest process that visits carries the job and
// visits every tick, at no weight in the count. After an outage the first
// tick due is the latest: one catch-up run, not one per missed tick.

// tickVisits is what a dense schedule aims for: random visits a tick,
// fleet-wide, beside the carrier's. A tick the carrier misses goes
// without a visit with chance e^-3, 5 %.
const tickVisits = 3

// tickSpread spreads a tick's visits over its first milliseconds, so that
// a fleet's processes do not all reach Redis in the same instant.
const tickSpread = 100 * time.Millisecond

// tickDenseGap is the gap between ticks below which not every process
// visits every tick.
const tickDenseGap = time.Minute

// ticks is a schedule, the mode of a job with Schedule: its state in this
// process.
type ticks struct {
	sched   schedule.Schedule
	dense   time.Duration // tickDenseGap, or a test's
	last    atomic.Int64  // unix ms of the latest tick known taken or skipped, fleet-wide (at first: registration)
	offset  atomic.Int64  // ns: Redis's clock minus this process's, as the last reply showed
	want    atomic.Int64  // unix ms of the tick the next visit names; 0: none planned
	count   floatBox      // the processes that visit, as the last reply counted
	weight  floatBox      // what the planned visit adds to the count: 1/its chance
	lastRun atomic.Int64  // unix ms of the tick this process last ran
	late    atomic.Int64  // ns: how long after its tick, on Redis's clock, that run began
}

func newTicks(s schedule.Schedule, dense time.Duration, now time.Time) *ticks {
	t := &ticks{sched: s, dense: dense}
	t.last.Store(now.UnixMilli())
	return t
}

// visit names the tick due (or the next) on Redis's clock; the lock's
// state outlives it by two gaps and a minute, and the carrier is taken
// for gone after a gap and a half without its visit.
func (t *ticks) visit(_ *entry, _ bool, now time.Time) visit {
	tick := t.visiting(now)
	gap := t.sched.Next(tick).Sub(tick)
	weight := t.weight.Load()
	v := visit{tick: tick, carrierSilence: gap + gap/2, watcherSilence: 2 * watchEvery * gap}
	if weight == 0 {
		v.kind = visitCarrier
	}
	v.args = []any{"tick", tick.UnixMilli(), (2*gap + time.Minute).Milliseconds(), strconv.FormatFloat(weight, 'g', -1, 64)}
	return v
}

// learn plans the next visit, unless a slice runs the tick elsewhere (the
// process comes back when it ends); a visit that took the lock runs its
// tick.
func (t *ticks) learn(s *slice, v visit, sent time.Time) {
	g := s.g
	t.heard(g, sent, s.taken)
	if g.state == lockTaken {
		s.tick = v.tick
		t.lastRun.Store(v.tick.UnixMilli())
		t.late.Store(int64(t.redisNow(s.taken).Sub(v.tick)))
	}
	if g.state != lockRunning {
		s.until = t.plan(s.taken, strideOf(g))
	}
}

// handOn: a tick is one run, More or not. The lock is left to expire,
// with no round trip, unless it would outlive the time to the next tick.
func (t *ticks) handOn(ctx context.Context, s *slice, res result, _ time.Time) error {
	e := s.e
	e.coolOff(s.until)
	if next := t.sched.Next(s.tick); res.Duration <= e.cfg.Budget && e.lock.ttl+e.lock.ttl/8 < next.Sub(s.tick) {
		return nil
	}
	return s.lock.release(ctx, releasePlain)
}

// timerDue: the plan, a few milliseconds past the tick already (or the
// timer's retry, again).
func (t *ticks) timerDue(e *entry, again time.Time) (time.Time, bool) {
	return time.Unix(0, max(e.coolUntil.Load(), again.UnixNano())), true
}

func (t *ticks) fleet(*entry) float64 { return t.count.Load() }

// redisNow is now on Redis's clock, as far as this process knows it.
func (t *ticks) redisNow(now time.Time) time.Time {
	return now.Add(time.Duration(t.offset.Load()))
}

// strideOf is how many ticks on a process that carries the job (1) or
// watches its carrier (watchEvery) visits, whatever its share draws; 0
// for any other.
func strideOf(g grant) int {
	switch {
	case g.carry:
		return 1
	case g.watch:
		return watchEvery
	}
	return 0
}

// plan picks the next visit after the latest tick known: the first tick
// this process visits (all, or a share of a dense schedule's ticks) and
// when, on its own clock. The job's carrier visits the next tick too, and
// its watcher the stride-th, weighing nothing in the count unless its own
// share drew that tick first: so a dense schedule's ticks do not depend on
// random visits alone.
func (t *ticks) plan(now time.Time, stride int) time.Time {
	last := time.UnixMilli(t.last.Load())
	chance := 1.0
	if fleet := t.count.Load(); t.sched.Gap() < t.dense && fleet > tickVisits {
		chance = max(tickVisits/fleet, float64(t.sched.Gap())/float64(t.dense))
	}
	rnow := t.redisNow(now)
	tick := t.sched.Due(last, rnow)
	if tick.IsZero() {
		tick = t.sched.Next(last)
	}
	weight := 1 / chance
	for i := 0; i < schedule.ScanMax && chance < 1 && rand.Float64() >= chance && tick.After(rnow); i++ {
		if i == stride-1 {
			weight = 0 // the carrier's visit, or its watcher's
			break
		}
		tick = t.sched.Next(tick) // another process's turn, as likely as not
	}
	t.want.Store(tick.UnixMilli())
	t.weight.Store(weight)
	jitter := time.Duration(rand.Int64N(int64(tickSpread)))
	if weight == 0 {
		jitter += tickSpread // the carrier's visit comes after the random ones: it runs the ticks they left
	}
	return tick.Add(-time.Duration(t.offset.Load())).Add(jitter)
}

// heard takes in what a visit's reply said: Redis's clock, the latest
// tick taken (or skipped while paused), the fleet's count.
func (t *ticks) heard(g grant, sent, received time.Time) {
	if g.redisNow > 0 {
		// The reply left Redis between sent and received: take the middle.
		mid := sent.Add(received.Sub(sent) / 2)
		t.offset.Store(int64(time.UnixMilli(g.redisNow).Sub(mid)))
	}
	if g.tick > t.last.Load() {
		t.last.Store(g.tick)
	}
	if g.fleet > 0 {
		t.count.Store(g.fleet)
	}
}

// visiting is the tick a visit at now names: the latest due, or the
// next if none is (Redis then says it has not come).
func (t *ticks) visiting(now time.Time) time.Time {
	last := time.UnixMilli(t.last.Load())
	if due := t.sched.Due(last, t.redisNow(now)); !due.IsZero() {
		return due
	}
	return t.sched.Next(last)
}

// tickHoldMax bounds how long past its tick a local gate (the pressure
// gate) holds a scheduled visit back: a tick held longer would be run
// late, or by no one once the next tick is named.
const tickHoldMax = 500 * time.Millisecond

// tickOverdue reports whether the tick that e's visit at now names is
// past its tick by tickHoldMax, or half the schedule's gap if shorter:
// the pressure gate lets such a visit through.
func (e *entry) tickOverdue(now time.Time) bool {
	t, ok := e.mode.(*ticks)
	if !ok {
		return false
	}
	return t.redisNow(now).Sub(t.visiting(now)) >= min(tickHoldMax, t.sched.Gap()/2)
}

type tickKey struct{}

// Tick returns the tick that a scheduled job's slice runs, from the
// context its Run gets, and false for any other context: a periodic task
// names itself by it, so that a tick enqueues it once.
func Tick(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(tickKey{}).(time.Time)
	return t, ok
}
