package recruiter

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
)

// modeEntry registers a job of cfg at t0 as Register would, without a
// recruiter: its entry, with its mode.
func modeEntry(t *testing.T, name string, cfg JobConfig, t0 time.Time) *entry {
	t.Helper()
	cfg = cfg.withDefaults()
	if err := cfg.validate(name); err != nil {
		t.Fatal(err)
	}
	return newEntry(Func(name, func(context.Context) (Report, error) { return Report{}, nil }), name, cfg, Config{Prefix: "ws"}.withDefaults(), t0)
}

// TestModeVisit: what each mode's visit tells the acquire script, by the
// visit's kind: its kind, its mode's name, and its weight in the count.
func TestModeVisit(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	automatic := JobConfig{Every: time.Second}
	cases := []struct {
		name   string
		cfg    JobConfig
		woken  bool
		before func(e *entry)
		kind   visitKind
		args   []any // the mode's name and, where one, its weight (last)
	}{
		{name: "fixed rate", cfg: JobConfig{Rate: 0.5}, kind: visitPlanned, args: []any{"rate"}},
		{name: "fixed rate, woken", cfg: JobConfig{Rate: 0.5}, woken: true, kind: visitWoken, args: []any{"rate"}},
		{name: "automatic, planned", cfg: automatic, kind: visitPlanned, args: []any{"pace", "1"},
			before: func(e *entry) { paceOf(e).interval.Store(int64(time.Second)) }},
		{name: "automatic, planned, a gap of 40 slots", cfg: automatic, kind: visitPlanned, args: []any{"pace", "40"},
			before: func(e *entry) { paceOf(e).interval.Store(int64(40 * time.Second)) }},
		{name: "automatic, woken", cfg: automatic, woken: true, kind: visitWoken, args: []any{"pace", "0"}},
		{name: "automatic, a backlog", cfg: automatic, kind: visitBacklog, args: []any{"pace", "0"},
			before: func(e *entry) { paceOf(e).continuing.Store(true) }},
		{name: "automatic, the carrier's", cfg: automatic, kind: visitCarrier, args: []any{"pace", "0"},
			before: func(e *entry) { paceOf(e).resume.Store(t0.Add(time.Minute).UnixNano()) }},
		{name: "schedule, drawn", cfg: JobConfig{Schedule: "* * * * * *"}, kind: visitPlanned, args: []any{"tick", "1"}},
		{name: "schedule, one in four", cfg: JobConfig{Schedule: "* * * * * *"}, kind: visitPlanned, args: []any{"tick", "4"},
			before: func(e *entry) { e.mode.(*ticks).weight.Store(4) }},
		{name: "schedule, the carrier's", cfg: JobConfig{Schedule: "* * * * * *"}, kind: visitCarrier, args: []any{"tick", "0"},
			before: func(e *entry) { e.mode.(*ticks).weight.Store(0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := modeEntry(t, "tidy", c.cfg, t0)
			if c.before != nil {
				c.before(e)
			}
			v := e.mode.visit(e, c.woken, t0)
			if v.kind != c.kind {
				t.Errorf("kind %d, want %d", v.kind, c.kind)
			}
			if v.args[0] != c.args[0] {
				t.Errorf("mode %v, want %v", v.args[0], c.args[0])
			}
			if len(c.args) > 1 && v.args[len(v.args)-1] != c.args[1] {
				t.Errorf("weight %v, want %v (args %v)", v.args[len(v.args)-1], c.args[1], v.args)
			}
			if _, fixed := e.mode.(fixedRate); !fixed && v.carrierSilence <= 0 {
				t.Errorf("the carrier's silence %v, want it set", v.carrierSilence)
			}
		})
	}
}

// TestModeLearn: what each mode plans from an acquire's answer: until
// when its process stays away, and the tick a taken visit runs.
func TestModeLearn(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	const every = time.Second
	automatic := JobConfig{Every: every}
	perSecond := JobConfig{Schedule: "* * * * * *"}
	cases := []struct {
		name     string
		cfg      JobConfig
		woken    bool
		before   func(e *entry)
		g        grant
		min, max time.Duration // s.until - t0
		tick     bool          // the slice runs the tick it named
	}{
		{name: "fixed rate, taken: no plan", cfg: JobConfig{Rate: 0.5}, g: grant{state: lockTaken}},
		{name: "fixed rate, resting: its rest", cfg: JobConfig{Rate: 0.5, Every: every}, g: grant{state: lockResting, wait: 300 * time.Millisecond},
			min: 300 * time.Millisecond, max: 300 * time.Millisecond},
		{name: "automatic, alone: it carries, the next slot at the latest", cfg: automatic, g: grant{state: lockTaken, left: 400 * time.Millisecond, fleet: 1, folds: paceYoung, carry: true},
			min: 400 * time.Millisecond, max: 400*time.Millisecond + every/16},
		{name: "automatic, the carrier: the next slot, a sixteenth in", cfg: automatic,
			before: func(e *entry) { paceOf(e).gapMean.Store(int64(time.Hour)) },
			g:      grant{state: lockTaken, left: 400 * time.Millisecond, fleet: 1e6, folds: paceYoung, carry: true},
			min:    400*time.Millisecond + every/16, max: 400*time.Millisecond + every/16},
		{name: "automatic, the watcher: the eighth slot on, a sixteenth in", cfg: automatic,
			before: func(e *entry) { paceOf(e).gapMean.Store(int64(time.Hour)) },
			g:      grant{state: lockResting, wait: 400 * time.Millisecond, left: 400 * time.Millisecond, fleet: 1e6, folds: paceYoung, watch: true},
			min:    400*time.Millisecond + 7*every + every/16, max: 400*time.Millisecond + 7*every + every/16},
		{name: "schedule, the watcher: at most the eighth tick on", cfg: perSecond,
			before: func(e *entry) { e.mode.(*ticks).count.Store(1000) },
			g:      grant{state: lockResting, redisNow: t0.UnixMilli(), tick: t0.UnixMilli(), fleet: 1000, watch: true},
			min:    time.Second, max: watchEvery*time.Second + 2*tickSpread},
		{name: "automatic, woken: the plan stands", cfg: automatic, woken: true,
			before: func(e *entry) { paceOf(e).planned.Store(t0.Add(time.Minute).UnixNano()) },
			g:      grant{state: lockTaken, left: 400 * time.Millisecond, fleet: 1, carry: true},
			min:    time.Minute, max: time.Minute},
		{name: "automatic, the carrier's visit resumes the random plan", cfg: automatic,
			before: func(e *entry) {
				p := paceOf(e)
				p.resume.Store(t0.Add(time.Minute).UnixNano())
				p.interval.Store(int64(gapOf(100)))
			},
			g:   grant{state: lockResting, wait: 400 * time.Millisecond, left: 400 * time.Millisecond, fleet: 100},
			min: time.Minute, max: time.Minute},
		{name: "automatic, the carrier's visit finds the fleet shrunk: a fresh plan", cfg: automatic,
			before: func(e *entry) {
				p := paceOf(e)
				p.resume.Store(t0.Add(time.Hour).UnixNano())
				p.interval.Store(int64(gapOf(1000)))
			},
			g:   grant{state: lockResting, wait: 400 * time.Millisecond, left: 400 * time.Millisecond, fleet: 1, folds: paceYoung},
			min: 400 * time.Millisecond, max: 400*time.Millisecond + 30*every},
		{name: "schedule, taken: runs its tick, plans the next", cfg: perSecond,
			g: grant{state: lockTaken, redisNow: t0.UnixMilli(), tick: t0.UnixMilli(), fleet: 1}, tick: true,
			min: time.Second, max: time.Second + 2*tickSpread},
		{name: "schedule, running elsewhere: back when it ends", cfg: perSecond,
			g:   grant{state: lockRunning, wait: 700 * time.Millisecond, redisNow: t0.UnixMilli(), fleet: 1},
			min: 700*time.Millisecond - (lockTTL(budgetDefault) - budgetDefault), max: 700 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := modeEntry(t, "tidy", c.cfg, t0.Add(-time.Second))
			if c.before != nil {
				c.before(e)
			}
			v := e.mode.visit(e, c.woken, t0)
			s := &slice{e: e, g: c.g, taken: t0, woken: c.woken}
			s.until = t0.Add(e.holdOff(c.g))
			e.mode.learn(s, v, t0)
			if d := s.until.Sub(t0); d < c.min || d > c.max {
				t.Errorf("stays away %v, want %v to %v", d, c.min, c.max)
			}
			if ran := !s.tick.IsZero(); ran != c.tick || ran && !s.tick.Equal(v.tick) {
				t.Errorf("runs tick %v, want it %v (named %v)", s.tick, c.tick, v.tick)
			}
		})
	}
}

// TestModeHandOn: how each mode hands its lock on after a run, as Redis
// then holds it: released, left to expire, or resting, fleet-wide.
func TestModeHandOn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	const every = 2 * time.Second
	ran := func(d time.Duration, items int, more bool) result {
		return result{Outcome: OutcomeRan, Ran: true, Duration: d, Items: items, More: more}
	}
	cases := []struct {
		name    string
		cfg     JobConfig
		res     result
		seat    bool          // the slice takes a seat beside another's (a woken visit, Slices 2)
		timer   time.Duration // if set: the pace timer visits again within this
		held    bool          // the lock still names the slice's token: left to expire
		rest    bool          // the job rests, fleet-wide
		streak  string        // the lock's streak field after
		coolMin time.Duration // this process's cool-off, from the run's end
	}{
		{name: "fixed rate with Every: rests what is left", cfg: JobConfig{Rate: 0.5, Every: every}, res: ran(10*time.Millisecond, 0, false), rest: true, coolMin: every - time.Second},
		{name: "fixed rate, a backlog: released", cfg: JobConfig{Rate: 0.5, Every: every}, res: ran(10*time.Millisecond, 5, true)},
		{name: "fixed rate without Every: released, one budget here", cfg: JobConfig{Rate: 0.5}, res: ran(10*time.Millisecond, 0, false), coolMin: budgetDefault - time.Millisecond},
		{name: "automatic: left to expire", cfg: JobConfig{Every: 24 * time.Hour}, res: ran(10*time.Millisecond, 0, false), held: true},
		{name: "automatic, a backlog: released, the streak grows", cfg: JobConfig{Every: every}, res: ran(10*time.Millisecond, 5, true), streak: "1"},
		{name: "automatic, overran: released", cfg: JobConfig{Every: every, Budget: 50 * time.Millisecond}, res: ran(200*time.Millisecond, 0, false)},
		{name: "automatic, a seat with a backlog: back soon, the timer too", cfg: JobConfig{Every: time.Minute, Slices: 2}, seat: true,
			res: ran(10*time.Millisecond, 5, true), streak: "", timer: time.Minute / 2},
		{name: "fixed rate, a seat with a backlog: back soon", cfg: JobConfig{Rate: 0.5, Every: time.Minute, Slices: 2}, seat: true,
			res: ran(10*time.Millisecond, 5, true), coolMin: 0},
		{name: "schedule, per minute: left to expire", cfg: JobConfig{Schedule: "* * * * *"}, res: ran(10*time.Millisecond, 5, true), held: true},
		{name: "schedule, per second: released", cfg: JobConfig{Schedule: "* * * * * *", Budget: 800 * time.Millisecond}, res: ran(10*time.Millisecond, 0, false)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := redistest.Prefix(t) + string(rune('a'+i))
			e := modeEntry(t, name, c.cfg, time.Now().Add(-time.Minute))
			r := &Recruiter{rdb: rdb, born: "00000000000000000001"}
			s := &slice{r: r, e: e, ctx: ctx}
			if tk, ok := e.mode.(*ticks); ok {
				tk.last.Store(time.Now().Add(-time.Minute).UnixMilli()) // a tick is due
			}
			if c.seat {
				// Another process's slice holds the lock.
				if _, g, err := e.lock.acquire(ctx, rdb, e.mode.visit(e, false, time.Now())); err != nil || g.state != lockTaken {
					t.Fatalf("the other slice's acquire: %v, %+v", err, g)
				}
				s.woken = true
				if p, ok := e.mode.(*pace); ok {
					p.planned.Store(time.Now().Add(time.Hour).UnixNano()) // a random visit planned far off
				}
			}
			v := e.mode.visit(e, s.woken, time.Now())
			h, g, err := e.lock.acquire(ctx, rdb, v)
			if err != nil || g.state != lockTaken || (g.seat != "") != c.seat {
				t.Fatalf("acquire: %v, %+v", err, g)
			}
			s.lock, s.g, s.taken = h, g, time.Now()
			s.until = s.taken.Add(e.holdOff(g))
			e.mode.learn(s, v, s.taken)
			end := time.Now() // the run's end, from which the cool-off counts
			if err := e.mode.handOn(ctx, s, c.res, end); err != nil {
				t.Fatal(err)
			}
			fields, err := rdb.HGetAll(ctx, e.lock.key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if held := fields["token"] == h.token; held != c.held {
				t.Errorf("lock held %v, want %v: %v", held, c.held, fields)
			}
			if rest := fields["rest"] != ""; rest != c.rest {
				t.Errorf("resting %v, want %v: %v", rest, c.rest, fields)
			}
			if fields["streak"] != c.streak && !(c.streak == "" && fields["streak"] == "0") {
				t.Errorf("streak %q, want %q", fields["streak"], c.streak)
			}
			if c.seat && fields["s1"] != "" && fields["s1"][:len(h.token)] == h.token {
				t.Errorf("the seat still held: %v", fields)
			}
			if due, _ := e.mode.timerDue(e, time.Time{}); c.timer > 0 && time.Until(due) > c.timer {
				t.Errorf("the timer visits again in %v, want within %v", time.Until(due), c.timer)
			}
			if cool := time.Unix(0, e.coolUntil.Load()).Sub(end); c.coolMin > 0 && cool < c.coolMin {
				t.Errorf("cools off %v here, want at least %v", cool, c.coolMin)
			}
		})
	}
}

// TestScheduleTakesNoShareOfTheRoll: a scheduled job is never drawn (its
// visits are at its ticks, the pace timer's): beside it an automatic job
// takes the whole share, and fixed rates may sum to 1 (it once took draws
// it could never use: "Drawn 356 / Skipped 356", a rate of 0.5). With
// TrafficOnly there is no timer, and it shares the roll as before.
func TestScheduleTakesNoShareOfTheRoll(t *testing.T) {
	srv := redistest.Start(t)
	nothing := func(context.Context) (Report, error) { return Report{}, nil }
	cases := []struct {
		name        string
		trafficOnly bool
		other       JobConfig
		shares      map[string]float64 // nil: other is refused
	}{
		{name: "beside an automatic job", other: JobConfig{Every: time.Minute}, shares: map[string]float64{"nightly": 0, "other": 1}},
		{name: "beside a rate of 1", other: JobConfig{Rate: 1}, shares: map[string]float64{"nightly": 0, "other": 1}},
		{name: "traffic only, beside an automatic job", trafficOnly: true, other: JobConfig{Every: time.Minute}, shares: map[string]float64{"nightly": 0.5, "other": 0.5}},
		{name: "traffic only, beside a rate of 1", trafficOnly: true, other: JobConfig{Rate: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(srv.Client(t), Config{Prefix: redistest.Prefix(t), TrafficOnly: c.trafficOnly})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Shutdown(context.Background())
			if err := r.Register(Func("nightly", nothing), JobConfig{Schedule: "0 3 * * *"}); err != nil {
				t.Fatal(err)
			}
			for range 1000 {
				r.Draw() // dismissed either way: the job cools off until 3:00
			}
			if js := r.Stats().Jobs[0]; (js.Drawn > 0) != c.trafficOnly {
				t.Errorf("the schedule alone drawn %d times of 1000 rolls (rate %v), want drawn: %v", js.Drawn, js.Rate, c.trafficOnly)
			}
			err = r.Register(Func("other", nothing), c.other)
			if c.shares == nil {
				if err == nil {
					t.Errorf("%+v beside a schedule with TrafficOnly: accepted, want refused (no share left for it)", c.other)
				}
				return
			}
			if err != nil {
				t.Fatalf("%+v beside a schedule: %v", c.other, err)
			}
			for _, js := range r.Stats().Jobs {
				if want := c.shares[js.Name]; js.Rate != want {
					t.Errorf("%s: rate %v, want %v", js.Name, js.Rate, want)
				}
			}
		})
	}
}
