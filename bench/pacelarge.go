package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/worksteal/worksteal/internal/testing/pacefleet"
)

// The large part of the pace benchmark (`-pace-large`, `make bench-pace
// ARGS=-pace-large`): the recruiter's planning code against the real
// acquire script at 10,000 processes, a quiet fleet (no traffic: the pace
// timers make every visit), its steady cost and cadence, and the cadence
// after a scale-in to 100 processes whichever of them leave. It writes
// its own section of BENCHMARKS.md, just after the sweep's.

var paceLargeMarks = marks{"<!-- pace-large:begin -->", "<!-- pace-large:end -->"}

const (
	paceLargeEvery   = time.Second
	paceLargeClients = 8
	// paceRandomVisits and paceWatchEvery are the recruiter's
	// visitsPerSlot and watchEvery (recruiter/pace.go): the random visits
	// a slot gets, and how many slots apart the carrier's watcher visits.
	paceRandomVisits = 1.5
	paceWatchEvery   = 8
)

// paceCut is one way a fleet shrinks: who leaves.
type paceCut struct {
	Who  string // who leaves, for the table and the log
	shed func(f *pacefleet.Fleet, ctx context.Context, n int) error
}

var paceCuts = []paceCut{
	{"the youngest", (*pacefleet.Fleet).Shrink},
	{"the oldest (the carrier among them)", (*pacefleet.Fleet).ShrinkOldest},
	{"the oldest and the youngest (the carrier and its watcher)", (*pacefleet.Fleet).ShrinkToMiddle},
}

// paceLargeRun is one fleet's figures: its steady window, then its
// buckets after the cut.
type paceLargeRun struct {
	Cut     paceCut
	Startup time.Duration // to start the recruiters
	Shed    time.Duration // to shut the leavers down
	Steady  pacefleet.Figures
	After   []pacefleet.Figures
}

// paceLargeSizes are the fleet's size before and after the cut, its
// settling and steady window, and the buckets after the cut.
type paceLargeSizes struct {
	From, To         int
	Settle, Window   time.Duration
	Bucket           time.Duration
	Buckets          int
	SettleN, WindowN int // the same in Everys
}

func paceLargePlan(quick bool) paceLargeSizes {
	s := paceLargeSizes{From: 10000, To: 100, SettleN: 30, WindowN: 40, Buckets: 4}
	if quick {
		s.From, s.To, s.SettleN, s.WindowN = 1000, 10, 20, 20
	}
	s.Settle, s.Window = time.Duration(s.SettleN)*paceLargeEvery, time.Duration(s.WindowN)*paceLargeEvery
	s.Bucket = 10 * paceLargeEvery
	return s
}

// runPaceLargeBench runs the three fleets one after the other (10,000
// recruiters take about 160 MB and much of two cores) and writes the
// section.
func runPaceLargeBench(ctx context.Context, o options) error {
	began, loadBefore := time.Now(), loadAverage()
	e, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer killAll()
	s := paceLargePlan(o.quick)
	var runs []paceLargeRun
	for i, c := range paceCuts {
		r, err := paceLargeFleet(ctx, e.addr, fmt.Sprintf("pace-large-%d", i), s, c)
		if err != nil {
			return fmt.Errorf("pace, %d processes, %s leave: %w", s.From, c.Who, err)
		}
		runs = append(runs, r)
	}
	machine := fmt.Sprintf("%s; load average (1 min) %s when the run began, %s when it ended", describeMachine(e.redisVersion), loadBefore, loadAverage())
	return writeSection(o, paceLargeMarks, paceLargeMarkdown(o, machine, time.Since(began), s, runs), map[string]chart{})
}

// paceLargeFleet starts s.From recruiters, settles and measures them,
// shrinks them to s.To with c, and tracks the buckets after the cut.
func paceLargeFleet(ctx context.Context, addr, prefix string, s paceLargeSizes, c paceCut) (r paceLargeRun, err error) {
	r.Cut = c
	t0 := time.Now()
	f, err := pacefleet.Start(addr, prefix, s.From, paceLargeClients, paceLargeEvery)
	if err != nil {
		return r, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, f.Close(cctx))
	}()
	r.Startup = time.Since(t0)
	logf("pace: %d processes started in %v; %s will leave", s.From, r.Startup.Round(time.Millisecond), c.Who)
	r.Steady = f.Measure(ctx, 0, s.Settle, s.Window)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	logf("pace: %d processes, steady: %v", s.From, r.Steady)
	t0 = time.Now()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = c.shed(f, sctx, s.To)
	cancel()
	if err != nil {
		return r, err
	}
	r.Shed = time.Since(t0)
	logf("pace: %d to %d processes, %s left (shut down in %v)", s.From, s.To, c.Who, r.Shed.Round(time.Millisecond))
	r.After = f.Track(ctx, 0, s.Bucket, s.Buckets)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	n := int(s.Bucket / paceLargeEvery)
	for b, p := range r.After {
		logf("pace: %d to %d processes, %s left, slots %d-%d after: %v", s.From, s.To, c.Who, b*n, b*n+n, p)
	}
	return r, nil
}

func paceLargeMarkdown(o options, machine string, took time.Duration, s paceLargeSizes, runs []paceLargeRun) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	cmd := "make bench-pace ARGS=-pace-large"
	if o.quick {
		cmd = "go run ./bench -pace-large -quick"
	}
	k := float64(s.From) / float64(s.To)
	n := int(s.Bucket / paceLargeEvery)
	p("### Measured: %s processes, then a scale-in to %d (`%s`)", count(s.From), s.To, cmd)
	p("")
	p("Written by `bench/` (`%s`, %v on %s); do not edit this section by hand, rerun the command.", cmd, took.Round(time.Second), time.Now().Format("2006-01-02"))
	p("Machine: %s.", machine)
	p("")
	p("The recruiter's planning code against the real acquire script at %s processes: recruiters in one process stand for them (%d shared clients), with one job at `Every: %v`, no `Rate` and no fast exit at all (a quiet fleet: the pace timers make every visit). Three fleets, one after the other: each starts at once, settles %d Everys, and a window of %d Everys counts its runs and every round trip of every recruiter (steady); then it shrinks to %d processes (the others shut down, which writes nothing to Redis: to the survivors, a crash), and %d consecutive buckets of %d Everys count the runs after the cut.",
		count(s.From), paceLargeClients, paceLargeEvery, s.SettleN, s.WindowN, s.To, s.Buckets, n)
	if o.quick {
		p("")
		p("**Quick run (`-quick`): a smaller fleet and short windows, for development only; not figures to quote.**")
	}
	p("")
	p("What to expect. Steady, a slot gets %.1f random visits, the carrier's one and the watcher's 1/%d, about %.1f round trips a run, at any fleet size. In the steady window just after a cold start of the whole fleet, round trips per run are higher than that (about 3.3): the fleet's count lags the start-up ramp, and processes plan their first long gaps (%s / %.1f ≈ %s slots) from it; this lasts one gap. After the cut, the %d survivors keep those long gaps, so their random visits (%d / %s ≈ %.3f a slot) do next to nothing:",
		paceRandomVisits, paceWatchEvery, paceRandomVisits+1+1.0/paceWatchEvery, count(s.From), paceRandomVisits, num(float64(s.From)/paceRandomVisits), s.To, s.To, num(float64(s.From)/paceRandomVisits), float64(s.To)*paceRandomVisits/float64(s.From))
	p("")
	p("- **the youngest leave** (Kubernetes' order): the carrier, the oldest process, stays and visits every slot: about %d runs in every bucket;", n)
	p("- **the oldest leave**, the carrier among them: the watcher, the youngest process, stays; it visits every %dth slot and takes the carrier's place once the carrier has been silent a slot and a half, so the runs restart within %d + 1.5 slots: slots 0–%d may miss some, the later buckets should not;", paceWatchEvery, paceWatchEvery, n)
	p("- **the oldest and the youngest leave**, the carrier and its watcher: only a survivor's random visit restarts the runs (its process then carries the job), k / %.1f slots on average after a shrink by k = %.0f, about %.0f slots; so the buckets may show gaps, even none at all.", paceRandomVisits, k, k/paceRandomVisits)
	p("")
	p("**Steady**, before the cut: the window's runs and round trips, and the visits to the job's lock among those round trips (the runs and the visits that found the run taken or a slice running); the other round trips are releases and, about a minute after the start, the registry writes (internal/registry) of the processes whose first write failed in the start-up burst (%s processes' first visits at once on %d clients' connections), which retry after a minute.", count(s.From), paceLargeClients)
	p("")
	p("| who leaves at the cut | round trips before the window: start-up and settling (per process) | runs per Every | round trips per run | visits per run |")
	p("|---|---|---|---|---|")
	for _, r := range runs {
		st := r.Steady
		visits := st.Runs + int(st.Taken+st.Locked+st.Failed)
		p("| %s | %s (%.1f) | %.2f | %.2f | %.2f |", r.Cut.Who, count(int(st.Warmup)), float64(st.Warmup)/float64(s.From), st.Cadence(), st.TripsPerRun(), float64(visits)/float64(max(st.Runs, 1)))
	}
	p("")
	p("**After the cut** to %d processes: the runs in each bucket of %d slots, and the round trips per run over the %d slots.", s.To, n, s.Buckets*n)
	p("")
	head, sep := "| who leaves |", "|---|"
	for i := range s.Buckets {
		head += fmt.Sprintf(" runs, slots %d–%d |", i*n, (i+1)*n)
		sep += "---|"
	}
	p("%s round trips per run, slots 0–%d |", head, s.Buckets*n)
	p("%s---|", sep)
	for _, r := range runs {
		row := "| " + r.Cut.Who + " |"
		var sum pacefleet.Figures
		for _, a := range r.After {
			row += fmt.Sprintf(" %d |", a.Runs)
			sum.Runs += a.Runs
			sum.Trips += a.Trips
		}
		perRun := "—"
		if sum.Runs > 0 {
			perRun = fmt.Sprintf("%.2f", sum.TripsPerRun())
		}
		p("%s %s |", row, perRun)
	}
	p("")
	var starts, sheds []string
	for _, r := range runs {
		starts = append(starts, r.Startup.Round(time.Millisecond).String())
		sheds = append(sheds, r.Shed.Round(time.Millisecond).String())
	}
	p("Starting the %s recruiters took %s; shutting the leavers down, %s (the buckets begin once it is done).", count(s.From), strings.Join(starts, ", "), strings.Join(sheds, ", "))
	return b.String()
}
