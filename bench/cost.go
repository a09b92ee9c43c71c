package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// variant is one way of serving the fast-exit endpoint in experiment 1.
type variant struct {
	Key, Label string
	args       []string
}

// topOnly reports whether v runs at the highest (saturating) rate only.
func (v variant) topOnly() bool {
	return slices.ContainsFunc(gateTwins, func(t [3]string) bool { return t[1] == v.Key || t[2] == v.Key })
}

// variants: "none" first and the control second (the progress line and
// the ratios read them by place).
var variants = []variant{
	{"none", "no middleware", []string{"-mw", "none"}},
	// The same as "none" in a second process: its ratio to "none" is the
	// machine's noise floor, the least difference this run can resolve.
	{"control", "no middleware, second process (control)", []string{"-mw", "none"}},
	{"empty", "middleware, no jobs", []string{"-mw", "empty"}},
	// Fixed rates (a share of enlistments), a job whose slice takes 20 ms:
	// the rows of the runs before automatic pace was the default.
	{"bg-0.01", "fixed rate 0.01, background", []string{"-mw", "job", "-rate", "0.01"}},
	{"bg-1", "fixed rate 1.0, background", []string{"-mw", "job", "-rate", "1"}},
	{"in-0.01", "fixed rate 0.01, inline", []string{"-mw", "job", "-rate", "0.01", "-inline"}},
	{"in-1", "fixed rate 1.0, inline", []string{"-mw", "job", "-rate", "1", "-inline"}},
	{"bg-0.01-cpu", "fixed rate 0.01, background, CPU job", []string{"-mw", "job", "-rate", "0.01", "-job", "cpu"}},
	{"bg-1-cpu", "fixed rate 1.0, background, CPU job", []string{"-mw", "job", "-rate", "1", "-job", "cpu"}},
	// What users get: typed tasks under the automatic pace (Every alone),
	// each burning 2 ms of CPU, and a backlog that never runs out.
	{"tasks", "tasks, automatic pace, 2 ms CPU each, backlog", []string{"-mw", "tasks"}},
	// The same with one handler at a time, as DrainConfig advises for
	// handlers that burn CPU (its default, 32, suits handlers that wait).
	{"tasks-c1", "tasks, automatic pace, 2 ms CPU each, backlog, Concurrency 1", []string{"-mw", "tasks", "-task-concurrency", "1"}},
	// Tasks that wait (I/O-bound: a call to another service) rather than
	// burn: stolen work that should cost requests nothing.
	{"tasks-wait", "tasks, automatic pace, 50 ms waiting each, backlog", []string{"-mw", "tasks", "-task-wait", tasksWait.String()}},
	// The floor of the CPU-bound rows: no worksteal, the service's own
	// goroutine burning 2 ms at a time, 125 times a second, while loaded.
	{"floor", "no middleware, a plain goroutine burning 2 ms of CPU 125 times a second (the floor)", []string{"-mw", "none", "-burn-floor"}},
	// Every row above runs with the pressure gate at its default; these
	// are their twins without it, at the saturating rate, where it acts.
	{"bg-0.01-nogate", "fixed rate 0.01, background, pressure gate off", []string{"-mw", "job", "-rate", "0.01", "-pressure", "-1ns"}},
	{"bg-1-cpu-nogate", "fixed rate 1.0, background, CPU job, pressure gate off", []string{"-mw", "job", "-rate", "1", "-job", "cpu", "-pressure", "-1ns"}},
	{"tasks-nogate", "tasks, automatic pace, 2 ms CPU each, backlog, pressure gate off", []string{"-mw", "tasks", "-pressure", "-1ns"}},
	{"tasks-c1-nogate", "tasks, automatic pace, 2 ms CPU each, backlog, Concurrency 1, pressure gate off", []string{"-mw", "tasks", "-task-concurrency", "1", "-pressure", "-1ns"}},
	{"bg-0.01-strict", "fixed rate 0.01, background, pressure 250µs", []string{"-mw", "job", "-rate", "0.01", "-pressure", "250us"}},
	{"bg-1-cpu-strict", "fixed rate 1.0, background, CPU job, pressure 250µs", []string{"-mw", "job", "-rate", "1", "-job", "cpu", "-pressure", "250us"}},
	{"tasks-strict", "tasks, automatic pace, 2 ms CPU each, backlog, pressure 250µs", []string{"-mw", "tasks", "-pressure", "250us"}},
}

// gateTwins groups each variant (the gate at its default) with its twins
// without the gate and with a stricter one, run at the saturating rate only.
var gateTwins = [][3]string{{"bg-0.01", "bg-0.01-nogate", "bg-0.01-strict"}, {"bg-1-cpu", "bg-1-cpu-nogate", "bg-1-cpu-strict"}, {"tasks", "tasks-nogate", "tasks-strict"}, {"tasks-c1", "tasks-c1-nogate", ""}, {"tasks-wait", "", ""}, {"floor", "", ""}}

// costRow is one variant at one request rate: throughput is the median
// across rounds, latencies are quantiles of all rounds' requests pooled.
type costRow struct {
	Variant      variant
	Rate         float64
	Throughput   float64
	P50, P99     time.Duration
	P999         time.Duration
	Errors       int64
	Rounds       int
	P99Ratio     float64 // to "no middleware" at the same rate, same run
	P99RatioMin  float64 // the rounds' own ratios, lowest and highest
	P99RatioMax  float64
	P99RatioMed  float64       // their median: a burst of the machine's other work in one round moves it little
	SlicesPerSec float64       // slices the variant's job ran, over the whole experiment
	Ran          uint64        // slices that ran during this rate's runs
	Pressured    uint64        // slices the pressure gate held back during this rate's runs
	Processed    int64         // tasks done during this rate's runs (-mw tasks)
	Busy         time.Duration // under load, for Processed
	BacklogLeft  int64         // tasks pending at the end of a run, the least of the rounds
}

// costPlan sizes experiment 1.
func costPlan(quick bool) (rates []float64, rounds int, warmup, window time.Duration) {
	if quick {
		return []float64{1000}, 2, 200 * time.Millisecond, 800 * time.Millisecond
	}
	return []float64{250, 1000, 2500}, 4, 500 * time.Millisecond, 2 * time.Second
}

// runRequestCost is experiment 1: one service process per variant, all
// started at once and loaded in turn, round after round (A B C ..., A B C
// ...), so that the machine's noise falls on every variant alike.
func runRequestCost(ctx context.Context, e *env, rep *report) error {
	rates, rounds, warmup, window := costPlan(e.opts.quick)
	variants := slices.DeleteFunc(slices.Clone(variants), func(v variant) bool {
		return len(e.opts.only) > 0 && !e.opts.only[v.Key] && v.Key != "none" && v.Key != "control"
	})
	progress := slices.IndexFunc(variants, func(v variant) bool { return v.Key == "bg-0.01" })
	procs := make([]*proc, len(variants))
	defer func() { stopAll(slices.DeleteFunc(procs, func(p *proc) bool { return p == nil })) }()
	for i, v := range variants {
		p, err := e.startProc(ctx, "service", "cost-"+v.Key, append([]string{"-prefix", "cost-" + v.Key, "-work", "20ms"}, v.args...)...)
		if err != nil {
			return err
		}
		procs[i] = p
	}
	g := newLoadGen()
	defer g.close()
	results := map[[2]int][]loadResult{} // variant, rate → rounds
	slicesAt := map[[2]int][3]uint64{}   // variant, rate → slices ran, held back by pressure, tasks done
	busy := map[[2]int]time.Duration{}   // variant, rate → time under load
	backlogLeft := map[[2]int]int64{}    // variant, rate → the least backlog left at a run's end
	began := time.Now()
	for r := range rounds {
		for ri, rate := range rates {
			for vi, v := range variants {
				if v.topOnly() && ri != len(rates)-1 {
					continue
				}
				// Counted over this run alone: the jobs go on between runs.
				counters := func() ([3]uint64, bool) {
					st, err := fetchStats(ctx, procs[vi].addr)
					if err != nil {
						return [3]uint64{}, false
					}
					if len(st.Jobs) == 0 { // the floor: its own goroutine's bursts
						return [3]uint64{0, 0, uint64(st.Processed)}, true
					}
					return [3]uint64{st.Jobs[0].Slices, st.Jobs[0].Pressured, uint64(st.Processed)}, true
				}
				tasks, floor := slices.Contains(v.args, "tasks"), slices.Contains(v.args, "-burn-floor")
				if tasks || floor {
					if err := post(ctx, procs[vi].addr, fmt.Sprintf("/backlog?n=%d", tasksBacklog)); err != nil {
						return err
					}
					if err := sleepCtx(ctx, tasksRamp); err != nil {
						return err
					}
				}
				before, _ := counters()
				res, err := g.run(ctx, []string{procs[vi].addr}, rate, warmup, window)
				if err != nil {
					return err
				}
				if floor {
					if err := post(ctx, procs[vi].addr, "/idle"); err != nil {
						return err
					}
				}
				if tasks {
					st, err := fetchStats(ctx, procs[vi].addr)
					if err != nil {
						return err
					}
					k := [2]int{vi, ri}
					if left, ok := backlogLeft[k]; !ok || st.Pending < left {
						backlogLeft[k] = st.Pending
					}
					if err := post(ctx, procs[vi].addr, "/idle"); err != nil {
						return err
					}
				}
				busy[[2]int{vi, ri}] += warmup + window
				results[[2]int{vi, ri}] = append(results[[2]int{vi, ri}], res)
				if after, ok := counters(); ok {
					k := [2]int{vi, ri}
					sum := slicesAt[k]
					slicesAt[k] = [3]uint64{sum[0] + after[0] - before[0], sum[1] + after[1] - before[1], sum[2] + after[2] - before[2]}
				}
			}
			line := fmt.Sprintf("cost: round %d/%d at %v req/s: p99 none %v, control %v", r+1, rounds, rate,
				results[[2]int{0, ri}][r].P99.Round(time.Microsecond), results[[2]int{1, ri}][r].P99.Round(time.Microsecond))
			if progress >= 0 {
				line += fmt.Sprintf(", bg-0.01 %v", results[[2]int{progress, ri}][r].P99.Round(time.Microsecond))
			}
			logf("%s", line)
		}
	}
	elapsed := time.Since(began).Seconds()
	for ri, rate := range rates {
		base := results[[2]int{0, ri}]
		for vi, v := range variants {
			rs := results[[2]int{vi, ri}]
			if len(rs) == 0 {
				continue // a variant of the top rate only
			}
			row := costRow{Variant: v, Rate: rate, Rounds: len(rs),
				Throughput: medianF(rs, func(l loadResult) float64 { return l.Throughput }),
				Ran:        slicesAt[[2]int{vi, ri}][0], Pressured: slicesAt[[2]int{vi, ri}][1],
				Processed: int64(slicesAt[[2]int{vi, ri}][2]), Busy: busy[[2]int{vi, ri}], BacklogLeft: backlogLeft[[2]int{vi, ri}],
			}
			pooled := pool(rs)
			row.P50, row.P99, row.P999 = pooled.quantile(0.50), pooled.quantile(0.99), pooled.quantile(0.999)
			ratios := make([]float64, len(rs))
			for i := range rs {
				row.Errors += rs[i].Errors
				ratios[i] = float64(rs[i].P99) / float64(base[i].P99)
			}
			row.P99Ratio = float64(row.P99) / float64(pool(base).quantile(0.99))
			row.P99RatioMin, row.P99RatioMax = slices.Min(ratios), slices.Max(ratios)
			row.P99RatioMed = medianF(ratios, func(x float64) float64 { return x })
			if st, err := fetchStats(ctx, procs[vi].addr); err == nil && len(st.Jobs) > 0 {
				row.SlicesPerSec = float64(st.Jobs[0].Slices) / elapsed
			}
			rep.cost = append(rep.cost, row)
		}
	}
	return nil
}

// post sends an empty POST to a service and checks its answer.
func post(ctx context.Context, addr, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s%s: %s", addr, path, resp.Status)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pool merges the rounds' latency histograms.
func pool(rs []loadResult) *histogram {
	h := &histogram{}
	for _, r := range rs {
		for i := range r.hist.counts {
			h.counts[i].Add(r.hist.counts[i].Load())
		}
		h.n.Add(r.hist.n.Load())
		h.max.Store(max(h.max.Load(), r.hist.max.Load()))
	}
	return h
}

func fetchStats(ctx context.Context, addr string) (serviceStats, error) {
	var s serviceStats
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a hung service fails the run, not hangs it
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s/stats: %s", addr, resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// fleetStats sums the counters of a fleet.
type fleetStats struct {
	Requests, LockRT, QueueRT, Items, Processed int64
	Drawn, Slices                               int64 // the jobs' draws and the slices they ran
}

func fetchFleet(ctx context.Context, ps []*proc) (fleetStats, []serviceStats, error) {
	var f fleetStats
	all := make([]serviceStats, 0, len(ps))
	for _, p := range ps {
		s, err := fetchStats(ctx, p.addr)
		if err != nil {
			return f, nil, err
		}
		f.Requests += s.Requests
		f.LockRT += s.LockRT
		f.QueueRT += s.QueueRT
		f.Processed += s.Processed
		for _, j := range s.Jobs {
			f.Items += int64(j.Items)
			f.Drawn += int64(j.Drawn)
			f.Slices += int64(j.Slices)
		}
		all = append(all, s)
	}
	return f, all, nil
}

func (f fleetStats) minus(b fleetStats) fleetStats {
	return fleetStats{f.Requests - b.Requests, f.LockRT - b.LockRT, f.QueueRT - b.QueueRT, f.Items - b.Items, f.Processed - b.Processed,
		f.Drawn - b.Drawn, f.Slices - b.Slices}
}

func medianF[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
