package recruiter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
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

// scheduleParser reads 5-field expressions, an optional leading seconds
// field, and descriptors (@hourly, @daily, …); CRON_TZ= or TZ= before
// them names the time zone (default UTC).
var scheduleParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// schedule is a parsed Schedule.
type schedule struct {
	expr string
	spec *cron.SpecSchedule
	gap  time.Duration // the shortest gap between its next ticks, as sampled at registration
}

// parseSchedule parses expr, and refuses what cannot be a fleet's shared
// ticks: @every (its ticks count from each process's start: use Every),
// and a schedule with no tick in the next five years.
func parseSchedule(expr string) (s schedule, err error) {
	defer func() {
		// The parser panics on some inputs (TZ=0): an error, never a crash.
		if v := recover(); v != nil {
			s, err = schedule{}, fmt.Errorf("the parser failed on it: %v", v)
		}
	}()
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") {
		return schedule{}, errors.New("@every counts from each process's start, so processes disagree on its ticks: use Every")
	}
	if err := checkZone(expr); err != nil {
		return schedule{}, err
	}
	parsed, err := scheduleParser.Parse(expr)
	if err != nil {
		return schedule{}, err
	}
	if err := checkSteps(expr); err != nil {
		return schedule{}, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return schedule{}, errors.New("not a calendar schedule")
	}
	s = schedule{expr: expr, spec: spec}
	t := time.Now()
	for i := range 4 {
		next := s.next(t)
		if next.IsZero() {
			return schedule{}, errors.New("it has no tick in the next five years")
		}
		if gap := next.Sub(t); i > 0 && (s.gap == 0 || gap < s.gap) {
			s.gap = gap
		}
		t = next
	}
	return s, nil
}

// checkZone refuses an empty CRON_TZ= or TZ=, which the parser reads as
// UTC: a zone left out by mistake would run its ticks hours off.
func checkZone(expr string) error {
	expr = strings.TrimSpace(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(expr, prefix); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return fmt.Errorf("%s names no time zone: name one (%sUTC for UTC)", prefix, prefix)
		}
	}
	return nil
}

// fieldSizes are the number of values of each field of a parsed
// expression, by its number of fields (seconds first when it has six).
var fieldSizes = map[int][]int{5: {60, 24, 31, 12, 7}, 6: {60, 60, 24, 31, 12, 7}}

// checkSteps refuses a step as long as its field or longer (*/60 in
// minutes, */24 in hours), which the parser accepts but which keeps only
// the first value: "every 70 seconds" would run once a minute. expr has
// been parsed.
func checkSteps(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) > 0 && strings.Contains(fields[0], "TZ=") {
		fields = fields[1:]
	}
	sizes := fieldSizes[len(fields)] // none for a descriptor
	if len(fields) != len(sizes) {
		return nil
	}
	for i, field := range fields {
		for part := range strings.SplitSeq(field, ",") {
			_, stepText, ok := strings.Cut(part, "/")
			if step, err := strconv.Atoi(stepText); ok && err == nil && step >= sizes[i] {
				return fmt.Errorf("the step of %q keeps only its first value: a step must be under %d, the number of values of its field", part, sizes[i])
			}
		}
	}
	return nil
}

// next is the first tick after t; zero if none within five years. A
// local time that a daylight-saving change repeats has one tick, the
// first; one that it skips has none that day.
func (s schedule) next(t time.Time) time.Time {
	n := s.spec.Next(t)
	if n.IsZero() {
		return n
	}
	loc := s.spec.Location
	if prev := t.In(loc); !t.IsZero() && sameWallClock(prev, n.In(loc)) {
		return s.spec.Next(n)
	}
	return n
}

func sameWallClock(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd && a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}

// due is the tick a visit at now (Redis's clock) should name: the latest
// tick after last and not after now, or zero if none is; after an outage,
// the latest of the missed ticks. It looks at most tickScan ticks.
func (s schedule) due(last, now time.Time) time.Time {
	var due time.Time
	for t, i := s.next(last), 0; !t.IsZero() && !t.After(now); t, i = s.next(t), i+1 {
		due = t
		if i == tickScan {
			// A dense schedule after a long outage: skip to the last gap.
			return s.due(now.Add(-2*s.gap), now)
		}
	}
	return due
}

const tickScan = 10000

// ticks is a schedule, the mode of a job with Schedule: its state in this
// process.
type ticks struct {
	sched   schedule
	dense   time.Duration // tickDenseGap, or a test's
	last    atomic.Int64  // unix ms of the latest tick known taken or skipped, fleet-wide (at first: registration)
	offset  atomic.Int64  // ns: Redis's clock minus this process's, as the last reply showed
	want    atomic.Int64  // unix ms of the tick the next visit names; 0: none planned
	count   floatBox      // the processes that visit, as the last reply counted
	weight  floatBox      // what the planned visit adds to the count: 1/its chance
	lastRun atomic.Int64  // unix ms of the tick this process last ran
	late    atomic.Int64  // ns: how long after its tick, on Redis's clock, that run began
}

func newTicks(s schedule, dense time.Duration, now time.Time) *ticks {
	t := &ticks{sched: s, dense: dense}
	t.last.Store(now.UnixMilli())
	return t
}

// visit names the tick due (or the next) on Redis's clock; the lock's
// state outlives it by two gaps and a minute, and the carrier is taken
// for gone after a gap and a half without its visit.
func (t *ticks) visit(_ *entry, _ bool, now time.Time) visit {
	tick := t.visiting(now)
	gap := t.sched.next(tick).Sub(tick)
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
	if next := t.sched.next(s.tick); res.Duration <= e.cfg.Budget && e.lock.ttl+e.lock.ttl/8 < next.Sub(s.tick) {
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
	if fleet := t.count.Load(); t.sched.gap < t.dense && fleet > tickVisits {
		chance = max(tickVisits/fleet, float64(t.sched.gap)/float64(t.dense))
	}
	rnow := t.redisNow(now)
	tick := t.sched.due(last, rnow)
	if tick.IsZero() {
		tick = t.sched.next(last)
	}
	weight := 1 / chance
	for i := 0; i < tickScan && chance < 1 && rand.Float64() >= chance && tick.After(rnow); i++ {
		if i == stride-1 {
			weight = 0 // the carrier's visit, or its watcher's
			break
		}
		tick = t.sched.next(tick) // another process's turn, as likely as not
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
	if due := t.sched.due(last, t.redisNow(now)); !due.IsZero() {
		return due
	}
	return t.sched.next(last)
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
	return t.redisNow(now).Sub(t.visiting(now)) >= min(tickHoldMax, t.sched.gap/2)
}

type tickKey struct{}

// Tick returns the tick that a scheduled job's slice runs, from the
// context its Run gets, and false for any other context: a periodic task
// names itself by it, so that a tick enqueues it once.
func Tick(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(tickKey{}).(time.Time)
	return t, ok
}
