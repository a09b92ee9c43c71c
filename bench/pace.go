package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/worksteal/worksteal/internal/testing/pacefleet"
)

// The pace benchmark (`-pace`, `make bench-pace`): automatic pace against
// fleet size, against traffic, and over time after a scale-in and a
// scale-out. Recruiters in this process stand for processes (pacefleet),
// on the run's own redis-server.

const paceEvery = 500 * time.Millisecond

// visits is the recruiter's aim of visits per slot (recruiter/pace.go).
const visits = 2.5

// paceRow is one fleet at one traffic.
type paceRow struct {
	Processes int
	PerEvery  float64 // enlistments per Every, fleet-wide
	pacefleet.Figures
}

// pacePlan is the sweep: fleet sizes at five fast exits per second per
// process (at least ten per Every in all), then traffics at 100 processes.
func pacePlan(quick bool) (sizes []int, traffics []float64) {
	if quick {
		return []int{1, 100, 1000}, []float64{10, 1000}
	}
	return []int{1, 10, 100, 1000}, []float64{3, 10, 100, 1000, 10000}
}

// paceTraffic is the traffic of the fleet-size sweep.
func paceTraffic(n int) float64 {
	return max(10, float64(n)*5*paceEvery.Seconds())
}

// runPaceBench runs the sweep and writes its section and plots.
func runPaceBench(ctx context.Context, o options) error {
	began, loadBefore := time.Now(), loadAverage()
	e, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer killAll()
	settle, window := 30*paceEvery, 100*paceEvery
	if o.quick {
		settle, window = 20*paceEvery, 40*paceEvery
	}
	done := map[[2]float64]paceRow{}
	point := func(n int, perEvery float64) (paceRow, error) {
		if row, ok := done[[2]float64{float64(n), perEvery}]; ok {
			return row, nil
		}
		prefix := fmt.Sprintf("pace-%d-%g", n, perEvery)
		f, err := pacefleet.Start(e.addr, prefix, n, 4, paceEvery)
		if err != nil {
			return paceRow{}, err
		}
		row := paceRow{Processes: n, PerEvery: perEvery, Figures: f.Measure(ctx, perEvery, settle, window)}
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.Close(cctx); err != nil {
			return row, err
		}
		if err := ctx.Err(); err != nil {
			return row, err
		}
		logf("pace: %d processes, %.0f fast exits per Every: %v", n, perEvery, row.Figures)
		done[[2]float64{float64(n), perEvery}] = row
		return row, nil
	}
	sizes, traffics := pacePlan(o.quick)
	var bySize, byTraffic []paceRow
	for _, n := range sizes {
		row, err := point(n, paceTraffic(n))
		if err != nil {
			return err
		}
		bySize = append(bySize, row)
	}
	for _, t := range traffics {
		row, err := point(100, t)
		if err != nil {
			return err
		}
		byTraffic = append(byTraffic, row)
	}
	var quiet []paceRow
	for _, n := range sizes {
		row, err := point(n, 0)
		if err != nil {
			return err
		}
		quiet = append(quiet, row)
	}
	resizes, err := paceResizes(ctx, e.addr, o.quick, settle)
	if err != nil {
		return err
	}
	machine := fmt.Sprintf("%s; load average (1 min) %s when the run began, %s when it ended", describeMachine(e.redisVersion), loadBefore, loadAverage())
	section := paceMarkdown(o, machine, time.Since(began), settle, window, bySize, byTraffic, quiet, resizes)
	return writeSection(o, paceMarks, section, map[string]chart{
		"pace-fleet.svg":   paceChart("Automatic pace against fleet size (5 fast exits/s per process)", "processes (log)", bySize, func(r paceRow) float64 { return float64(r.Processes) }),
		"pace-traffic.svg": paceChart("Automatic pace against traffic (100 processes)", "fast exits per Every, fleet-wide (log)", byTraffic, func(r paceRow) float64 { return r.PerEvery }),
	})
}

// paceChart plots runs per Every and round trips per run against x, with
// the targets.
func paceChart(title, xLabel string, rows []paceRow, x func(paceRow) float64) chart {
	zero := 0.0
	c := chart{Title: title, XLabel: xLabel, YLabel: "per Every / per run", LogX: true, YMin: &zero}
	runs := series{Name: "runs per Every", Points: true}
	trips := series{Name: "round trips per run (fleet)", Points: true}
	for _, r := range rows {
		runs.X, runs.Y = append(runs.X, x(r)), append(runs.Y, r.Cadence())
		trips.X, trips.Y = append(trips.X, x(r)), append(trips.Y, r.TripsPerRun())
	}
	lo, hi := x(rows[0]), x(rows[len(rows)-1])
	c.Series = []series{runs, trips,
		{Name: "target: at least 0.85 runs per Every", X: []float64{lo, hi}, Y: []float64{0.85, 0.85}, Dashed: true, Color: palette[0]},
		{Name: "target: at most 4 round trips per run", X: []float64{lo, hi}, Y: []float64{4, 4}, Dashed: true, Color: palette[1]},
	}
	return c
}

func paceMarkdown(o options, machine string, took, settle, window time.Duration, bySize, byTraffic, quiet []paceRow, resizes []paceResize) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	cmd := "make bench-pace"
	if o.quick {
		cmd = "go run ./bench -pace -quick"
	}
	p("## Automatic pace: cadence and round trips, 1 to 1,000 processes (`%s`)", cmd)
	p("")
	p("Written by `bench/` (`%s`, %v on %s); do not edit this section by hand, rerun the command.", cmd, took.Round(time.Second), time.Now().Format("2006-01-02"))
	p("Machine: %s.", machine)
	p("Recruiters in one process stand for the processes of a fleet (4 shared clients), with one job at `Every: %v` and no `Rate`, and its slices take no time. Fast exits come open-loop at random recruiters; each recruiter's first comes first, as when a fleet starts at once. After %d Everys of settling, a window of %d Everys counts the job's runs and every round trip of every recruiter (lock calls and releases). The targets: at least 0.85 runs per Every, at most 4 round trips per run.", paceEvery, int(settle/paceEvery), int(window/paceEvery))
	if o.quick {
		p("")
		p("**Quick run (`-quick`): short windows, for development only; not figures to quote.**")
	}
	table := func(rows []paceRow) {
		p("")
		p("| processes | fast exits per Every | runs per Every | round trips per run | round trips before the window: start-up and settling (per process) |")
		p("|---|---|---|---|---|")
		for _, r := range rows {
			p("| %s | %s | %.2f | %.2f | %s (%.1f) |", count(r.Processes), count(int(r.PerEvery)), r.Cadence(), r.TripsPerRun(), count(int(r.Warmup)), float64(r.Warmup)/float64(r.Processes))
		}
	}
	p("")
	p("### Against fleet size")
	p("")
	p("Five fast exits per second per process, at least ten per Every in all.")
	table(bySize)
	p("")
	p("![runs per Every and round trips per run against fleet size](bench/results/pace-fleet.svg)")
	p("")
	p("### Against traffic")
	p("")
	p("100 processes.")
	table(byTraffic)
	p("")
	p("![runs per Every and round trips per run against traffic](bench/results/pace-traffic.svg)")
	p("")
	p("### A quiet fleet: no fast exit at all")
	p("")
	p("No enlistment reaches any recruiter: each one's pace timer makes the visits it planned (an eighth of Every after the plan, %v here, when no enlistment made them). Settling here is the start-up alone; the round trips before the window include each recruiter's one reading of the eviction policy.", paceEvery/8)
	table(quiet)
	p("")
	paceResizeMarkdown(p, resizes)
	p("")
	p("### On paper: 10,000 processes")
	p("")
	p("A process's mean gap between visits is the fleet's estimated size over %.1f slots, so a slot gets about %.1f visits at any fleet size: with independent visits a slot is missed with chance e^-%.1f = %.0f %%, and a run costs its slot's visits, %.1f / %.2f = %.2f round trips, plus at most one release (a run taken late in its slot), so at most %.2f, at 10 or 10,000 processes alike. Each of 10,000 processes then visits about once per %s slots. A start-up of the whole fleet at once costs about %s round trips (one visit each, then one about every second slot while the count is young), once: less than a second of one Redis core.",
		visits, visits, visits, 100*math.Exp(-visits), visits, 1-math.Exp(-visits), visits/(1-math.Exp(-visits)), visits/(1-math.Exp(-visits))+1, count(int(10000/visits)), count(10000*5))
	p("")
	p("A slot in which no process of the fleet has a fast exit still runs the job: the pace timer makes the visits that no fast exit made (the quiet-fleet rows), at the same round trips per run; with `Config.TrafficOnly` it would not (docs/pacing.md, Limits).")
	return b.String()
}

// count writes a whole number with thousands separators.
func count(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return num(float64(n))
}

// paceBucket is the length of a bucket of the scale-in and scale-out runs.
const paceBucket = 10 * paceEvery

// paceResize is a fleet that changes size once: each run's last bucket
// before the change and its consecutive buckets after it.
type paceResize struct {
	From, To int
	Held     bool // the traffic stays the old size's: the survivors take it all
	Before   []pacefleet.Figures
	After    [][]pacefleet.Figures // per run, per bucket
}

// paceResizes runs scale-ins (100 to 10 processes, the traffic falling
// with the fleet or held; 1,000 to 10, held) and a scale-out (10 to 100)
// side by side, each on its own keys, runs times over.
func paceResizes(ctx context.Context, addr string, quick bool, settle time.Duration) ([]paceResize, error) {
	runs, buckets := 3, 8
	if quick {
		runs, buckets = 1, 4
	}
	rs := []paceResize{{From: 100, To: 10}, {From: 100, To: 10, Held: true}, {From: 1000, To: 10, Held: true}, {From: 10, To: 100}}
	for run := range runs {
		errs := make([]error, len(rs))
		before := make([]pacefleet.Figures, len(rs))
		after := make([][]pacefleet.Figures, len(rs))
		var wg sync.WaitGroup
		for i, r := range rs {
			wg.Go(func() {
				prefix := fmt.Sprintf("pace-resize-%d-%d-%v-%d", r.From, r.To, r.Held, run)
				before[i], after[i], errs[i] = paceResizeRun(ctx, addr, prefix, r, settle, buckets)
			})
		}
		wg.Wait()
		if err := errors.Join(append(errs, ctx.Err())...); err != nil {
			return nil, err
		}
		for i := range rs {
			rs[i].Before = append(rs[i].Before, before[i])
			rs[i].After = append(rs[i].After, after[i])
			for b, p := range after[i] {
				n := int(paceBucket / paceEvery)
				logf("pace: %s, run %d, slots %d-%d after: %v", rs[i].title(), run+1, b*n, b*n+n, p)
			}
		}
	}
	return rs, nil
}

// title names a resize.
func (r paceResize) title() string {
	switch {
	case r.To > r.From:
		return fmt.Sprintf("Scale-out, %d to %d processes", r.From, r.To)
	case r.Held:
		return fmt.Sprintf("Scale-in, %d to %d processes, traffic held", r.From, r.To)
	}
	return fmt.Sprintf("Scale-in, %d to %d processes, traffic falling with the fleet", r.From, r.To)
}

// paceResizeRun settles a fleet of r.From processes at its traffic,
// measures one bucket, changes its size to r.To, and tracks buckets
// buckets at the new size's traffic, or the old one's if r.Held.
func paceResizeRun(ctx context.Context, addr, prefix string, r paceResize, settle time.Duration, buckets int) (before pacefleet.Figures, after []pacefleet.Figures, err error) {
	from, to := r.From, r.To
	f, err := pacefleet.Start(addr, prefix, from, 4, paceEvery)
	if err != nil {
		return before, nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, f.Close(cctx))
	}()
	before = f.Measure(ctx, paceTraffic(from), settle, paceBucket)
	if to < from {
		err = f.Shrink(ctx, to)
	} else {
		err = f.Grow(to - from)
	}
	if err != nil {
		return before, nil, err
	}
	traffic := paceTraffic(to)
	if r.Held {
		traffic = paceTraffic(from)
	}
	return before, f.Track(ctx, traffic, paceBucket, buckets), nil
}

// pooled sums figures of several runs: runs per Every and round trips per
// run over them all, and the runs' least and greatest runs per Every.
func pooled(ps []pacefleet.Figures) (sum pacefleet.Figures, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		sum.Slots += p.Slots
		sum.Runs += p.Runs
		sum.Trips += p.Trips
		lo, hi = min(lo, p.Cadence()), max(hi, p.Cadence())
	}
	return sum, lo, hi
}

func paceResizeMarkdown(p func(string, ...any), rs []paceResize) {
	if len(rs) == 0 {
		return
	}
	runs := "One run"
	if n := len(rs[0].Before); n > 1 {
		runs = fmt.Sprintf("%d runs", n)
	}
	p("### After a scale-in and a scale-out")
	p("")
	p("A fleet settles as above at its traffic (five fast exits per second per live process, at least ten per Every in all), and its last %d Everys are measured; then it shrinks (the other recruiters shut down, and fast exits reach the survivors only) or grows (the new recruiters have their first fast exits first), its traffic becomes the new size's (or stays the old size's: *traffic held*, as when a load balancer spreads the same requests over fewer processes), and consecutive buckets of %d Everys are measured. %s of each, the scenarios side by side; the figures are over all runs, with the runs' least and greatest runs per Every in brackets; round trips per Every are the fleet's visits and releases.", int(paceBucket/paceEvery), int(paceBucket/paceEvery), runs)
	for _, r := range rs {
		p("")
		oldGap := float64(r.From) / visits
		switch {
		case r.To > r.From:
			p("**%s.** Theory: the %d new processes visit at once (one visit each, weighing one slot), then plan their gaps from a count that has not yet seen them, %d / %.1f = %.0f slots like the old ones, so the fleet visits about %.0f times a slot rather than %.1f until the count has grown (it folds a slot in eighths) and they have visited again: round trips per run should rise some tenfold, for a few old gaps.", r.title(), r.To-r.From, r.From, visits, oldGap, float64(r.To)/oldGap, visits)
		case r.Held:
			p("**%s.** Each survivor's traffic jumps %d-fold: within a window of 32 draws it guesses the fleet shrank by as much and brings its next visit forward, so the cadence should hold from the first slots (without the guess: %.0f %% of slots at first, for about %.0f slots, as in the scale-in whose traffic falls with the fleet).", r.title(), r.From/r.To, 100*(1-math.Exp(-float64(r.To)/oldGap)), oldGap)
		default:
			p("**%s.** Theory: each survivor's traffic is as before, so nothing tells it of the change before its next visit: it keeps its old mean gap, %d / %.1f = %.0f slots, so the %d survivors visit %.2f times a slot at first (%.0f %% of slots run) and the cadence should recover within about %.0f slots.", r.title(), r.From, visits, oldGap, r.To, float64(r.To)/oldGap, 100*(1-math.Exp(-float64(r.To)/oldGap)), oldGap)
		}
		p("")
		p("| slots after the change | runs per Every | round trips per run | round trips per Every |")
		p("|---|---|---|---|")
		row := func(label string, ps []pacefleet.Figures) {
			sum, lo, hi := pooled(ps)
			spread := ""
			if len(ps) > 1 {
				spread = fmt.Sprintf(" (%.2f–%.2f)", lo, hi)
			}
			perRun := "—"
			if sum.Runs > 0 {
				perRun = fmt.Sprintf("%.2f", sum.TripsPerRun())
			}
			p("| %s | %.2f%s | %s | %.2f |", label, sum.Cadence(), spread, perRun, float64(sum.Trips)/sum.Slots)
		}
		row(fmt.Sprintf("before (%d processes)", r.From), r.Before)
		for b := range r.After[0] {
			var ps []pacefleet.Figures
			for _, a := range r.After {
				ps = append(ps, a[b])
			}
			row(fmt.Sprintf("%d–%d", b*int(paceBucket/paceEvery), (b+1)*int(paceBucket/paceEvery)), ps)
		}
	}
	p("")
}
