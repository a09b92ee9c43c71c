package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// marks are the markers around a section this program owns in
// BENCHMARKS.md: the fleet's, and the pace's (`-pace`).
type marks struct{ begin, end string }

var (
	fleetMarks = marks{"<!-- fleet:begin -->", "<!-- fleet:end -->"}
	paceMarks  = marks{"<!-- pace:begin -->", "<!-- pace:end -->"}
)

// report gathers the experiments' figures and writes them out.
type report struct {
	opts          options
	machine       string
	loadBefore    string // the machine's load average, to judge the noise
	loadAfter     string
	began         time.Time
	took          time.Duration
	producerBatch cmdStat
	cost          []costRow
	redis         []redisRow
	health        []healthResult
	scale         []scaleRow
}

func describeMachine(redisVersion string) string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if v := infoField(strings.ReplaceAll(string(data), "\t", ""), "model name"); v != "" {
			cpu = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("%s, %d cores (%s/%s), %s, redis-server %s on loopback", cpu, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), redisVersion)
}

// loadAverage is the 1-minute load average ("" where /proc has none).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Fields(string(data) + " ")[0]
}

func (r *report) command() string {
	if r.opts.quick {
		return "go run ./bench -quick"
	}
	return "make bench-fleet"
}

// write renders the plots and the section, and splices the section into
// the markdown file between its markers (appending them if missing).
func (r *report) write() error {
	return writeSection(r.opts, fleetMarks, r.markdown(), r.charts())
}

// writeSection writes charts into o's results folder and section between
// m in o's markdown file (or to stdout).
func writeSection[C interface{ svg() string }](o options, m marks, section string, charts map[string]C) error {
	if err := os.MkdirAll(o.resultDir, 0o755); err != nil {
		return err
	}
	for name, c := range charts {
		if err := os.WriteFile(filepath.Join(o.resultDir, name), []byte(c.svg()), 0o644); err != nil {
			return err
		}
	}
	if o.markdown == "" {
		fmt.Print(section)
		return nil
	}
	old, err := os.ReadFile(o.markdown)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	next := splice(old, m, section)
	logf("wrote a section of %s and %d plots in %s", o.markdown, len(charts), o.resultDir)
	return os.WriteFile(o.markdown, next, 0o644)
}

// splice replaces what lies between the markers, leaving every other byte
// as it was; without markers it appends them, with the section, at the end.
func splice(doc []byte, m marks, section string) []byte {
	body := []byte(m.begin + "\n" + section + m.end)
	i := bytes.Index(doc, []byte(m.begin))
	j := bytes.Index(doc, []byte(m.end))
	if i < 0 || j < i {
		out := bytes.TrimRight(doc, "\n")
		if len(out) > 0 {
			out = append(out, "\n\n"...)
		}
		return append(append(out, body...), '\n')
	}
	out := append([]byte{}, doc[:i]...)
	out = append(out, body...)
	return append(out, doc[j+len(m.end):]...)
}

// lockBound is the recruiter's round trips per second per process that
// the fleet's jobs allow when no backlog remains: per job and per Every,
// at most two attempts (one that finds a slice running, one that finds
// its cooldown), each a lock call and a probe or a cooldown.
func lockBound() float64 {
	perSec := func(d time.Duration) float64 { return float64(time.Second) / float64(d) }
	return 4 * (perSec(drainEvery) + perSec(tidyEvery) + perSec(promoteEvery))
}

func joinRates(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = num(r)
	}
	return strings.Join(s, ", ")
}

// msOr is ms, or a dash when there is nothing to show.
func msOr(d time.Duration, ok bool) string {
	if !ok {
		return "—"
	}
	return ms(d)
}

func ms(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

func num(v float64) string {
	switch {
	case v >= 1000:
		s := fmt.Sprintf("%.0f", v)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("## The fleet: real processes, real Redis (`%s`)", r.command())
	p("")
	p("Written by `bench/` (`%s`, %v on %s); do not edit this section by hand, rerun the command.", r.command(), r.took.Round(time.Second), r.began.Format("2006-01-02"))
	p("Machine: %s.", r.machine)
	if r.loadBefore != "" {
		note := ""
		if l, err := strconv.ParseFloat(r.loadBefore, 64); err == nil && l > float64(runtime.NumCPU()) {
			note = " (above the core count: other work shared the machine, and the latency figures carry its noise)"
		}
		p("Load average (1 min) when the run began: %s, when it ended: %s, on %d cores%s.", r.loadBefore, r.loadAfter, runtime.NumCPU(), note)
	}
	p("The program starts its own `redis-server` (no persistence), lean net/http services (this program with `-role service`: `stealhttp.Middleware(rec)(mux)`, a `/fast` handler that calls `recruiter.MarkFastExit` and answers 3 bytes) and an open-loop load generator (requests due at fixed times, latency from the due time, so stalls are not hidden; log-linear histogram, quantiles within 0.4 %%). Every figure below comes from this one run of `%s`; ratios compare figures of the same run.", r.command())
	if r.opts.quick {
		p("")
		p("**Quick run (`-quick`): short windows, for development only; not figures to quote.**")
	}
	r.costSection(p)
	r.pressureSection(p)
	r.redisSection(p)
	r.healthSection(p)
	r.scaleSection(p)
	return b.String()
}

func (r *report) costSection(p func(string, ...any)) {
	if len(r.cost) == 0 {
		return
	}
	rates, rounds, warmup, window := costPlan(r.opts.quick)
	p("")
	p("### Request cost of fast exits")
	p("")
	p("One service process per variant, all running; the load goes to each in turn, round after round (%d rounds; each run %v of warm-up, then %v measured), at %v req/s, so the machine's noise falls on all alike. Latencies are quantiles of all rounds' requests pooled, served/s the median across rounds; \"p99 / none\" divides by the no-middleware p99 at the same rate (in brackets: the lowest and highest of the rounds' own ratios). The control is a second process without middleware: its ratio to the first is the machine's noise floor, the smallest difference this run can tell apart. The job's slice takes 20 ms (budget 50 ms, no `Every`, so after each slice the process rests the job for one budget): it waits, as Redis-bound work mostly does, or, in the \"CPU job\" rows, burns a core (the pessimistic case: it competes with the requests for the 2 cores). The \"tasks\" rows are what users get, typed tasks under the automatic pace with a backlog of CPU-bound tasks: the next section says how they run. The floor is the same service without worksteal whose own goroutine burns 2 ms at a time, 125 times a second, while it is loaded (as much as a tasks process burns at most): what CPU work inside the service costs its requests on this machine, whatever runs it. The service wires the recruiter, the middleware and `MarkFastExit` as the README shows (with its own key prefix, and `Inline` in the inline rows). slices/s: the job's slices per second over the whole experiment (all rates). (`%s`)", rounds, warmup, window, joinRates(rates), r.command())
	p("")
	p("| variant | req/s asked | served/s | p50 | p99 | p99.9 | p99 / none | slices/s | errors |")
	p("|---|---|---|---|---|---|---|---|---|")
	for _, c := range r.cost {
		p("| %s | %s | %s | %s | %s | %s | %.2f (%.2f-%.2f) | %s | %d |", c.Variant.Label, num(c.Rate), num(c.Throughput), ms(c.P50), ms(c.P99), ms(c.P999),
			c.P99Ratio, c.P99RatioMin, c.P99RatioMax, num(c.SlicesPerSec), c.Errors)
	}
	p("")
	p("![p99 latency of fast exits vs request rate](bench/results/fleet-latency.svg)")
	p("")
	var parts, floor, failed, noisy []string
	control := map[float64]costRow{}
	for _, c := range r.cost {
		if c.Variant.Key == "control" {
			control[c.Rate] = c
			floor = append(floor, fmt.Sprintf("%.2f at %s req/s (rounds %.2f-%.2f)", c.P99Ratio, num(c.Rate), c.P99RatioMin, c.P99RatioMax))
		}
	}
	for _, c := range r.cost {
		if c.Variant.Key != "bg-0.01" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%.2f at %s req/s (rounds %.2f-%.2f)", c.P99Ratio, num(c.Rate), c.P99RatioMin, c.P99RatioMax))
		if c.P99Ratio > 1.05 {
			failed = append(failed, num(c.Rate))
			// Within the noise floor: no worse than the control's own
			// pooled ratio plus 5 %.
			if c.P99Ratio <= control[c.Rate].P99Ratio+0.05 {
				noisy = append(noisy, num(c.Rate))
			}
		}
	}
	verdict := "**met** at every rate"
	if len(failed) > 0 {
		verdict = fmt.Sprintf("**not met** at %s req/s", strings.Join(failed, " and "))
		if len(noisy) > 0 {
			verdict += fmt.Sprintf(", though at %s req/s no further from the first process than the control plus 5 %%: the machine's noise there is larger than the target", strings.Join(noisy, " and "))
		}
	}
	p("Target: p99 of fast exits with a job at rate 0.01 in background mode within 5 %% of no middleware (p99 / none ≤ 1.05): %s; %s. The control, the same service without middleware in a second process, reads %s.",
		strings.Join(parts, ", "), verdict, strings.Join(floor, ", "))
}

// pressureSection compares, at the saturating rate, each variant (the
// pressure gate at its default) with its twin without the gate.
func (r *report) pressureSection(p func(string, ...any)) {
	top := map[string]costRow{}
	for _, c := range r.cost {
		if rates, _, _, _ := costPlan(r.opts.quick); c.Rate == rates[len(rates)-1] {
			top[c.Variant.Key] = c
		}
	}
	control, ok := top["control"]
	if !ok {
		return
	}
	p("")
	p("### Under pressure: the pressure gate")
	p("")
	p("The same experiment, at its saturating rate (%s req/s): each variant with the pressure gate at its default (`Config.Pressure` 1ms: a slice does not start while the p99 of the Go scheduler's latencies is 1 ms or more; every row above has it) next to its twins without it (`Pressure: -1`) and with a stricter one (`Pressure: 250µs`), loaded in the same rounds. \"ran\" and \"held back\" count the job's slices during that rate's runs (`JobStats.Slices`, `JobStats.Pressured`); a held-back slice is not lost, its job is drawn again later. The \"tasks\" rows are what users get: typed tasks (`tasks.Define`, `mux.Job(q, jobs.DrainConfig{})`, so up to 32 handlers at once, its default; and with `Concurrency: 1`; the drain measures handlers that burn and runs no more than GOMAXPROCS/2 of them at once, one on this machine, whatever Concurrency says) registered with `recruiter.JobConfig{Every: %v}` and no `Rate` (the automatic pace), a handler that burns about %v of CPU per task (a fixed amount of work, calibrated at start), and a backlog: %v before each of its runs, the service enqueues %s tasks (more than it can do in a run: \"backlog left\" is the least left at a run's end) and burns them until the run ends, then does what is left as no-ops, so that it burns no core while another process is measured; tasks/s counts the tasks done while the process was loaded. The \"waiting\" row's tasks wait %v each instead, burning no CPU (I/O-bound work, such as a call to another service), at the drain's default concurrency. The target is the control's own ratio plus 0.05: no further from the first process than the machine's noise floor, for the rounds pooled and for the median of the rounds' own ratios alike (\"target met\"). (`%s`)", num(control.Rate), tasksEvery, 2*time.Millisecond, tasksRamp, num(tasksBacklog), tasksWait, r.command())
	p("")
	p("| variant | pressure gate | p99 | p99.9 | p99 / none | control's p99 / none | target met | slices ran | slices held back | tasks/s | backlog left |")
	p("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, twin := range gateTwins {
		for i, key := range twin {
			c, ok := top[key]
			if !ok {
				continue
			}
			gate := []string{"on (1ms, the default)", "off", "on (250µs)"}[i]
			if key == "floor" {
				gate = "none (no worksteal)"
			}
			met := "no"
			if withinControl(c, control) {
				met = "yes"
			}
			perSec, left := "—", "—"
			if c.Busy > 0 && strings.HasPrefix(key, "tasks") {
				perSec, left = num(float64(c.Processed)/c.Busy.Seconds()), count(int(c.BacklogLeft))
			}
			if c.Busy > 0 && key == "floor" {
				perSec = num(float64(c.Processed) / c.Busy.Seconds())
			}
			p("| %s | %s | %s | %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %s | %d | %d | %s | %s |", c.Variant.Label, gate, ms(c.P99), ms(c.P999),
				c.P99Ratio, c.P99RatioMin, c.P99RatioMax, control.P99Ratio, control.P99RatioMin, control.P99RatioMax, met, c.Ran, c.Pressured, perSec, left)
		}
	}
	for _, target := range []struct{ key, issue string }{{"tasks", "28"}, {"tasks-c1", "28"}, {"tasks-wait", "24"}} {
		t, ok := top[target.key]
		if !ok {
			continue
		}
		verdict := "**met**"
		if !withinControl(t, control) {
			verdict = "**not met** (a miss)"
		}
		p("")
		p("Target (issue %s), %s: at the saturating rate, with the gate on, p99(fast exits with tasks) / p99(no middleware) at most the control's ratio + 0.05, both for the rounds pooled, %.2f against %.2f + 0.05, and for the median of the rounds' own ratios, which one round's burst of the machine's other work moves little, %.2f against %.2f + 0.05: %s.", target.issue, t.Variant.Label, t.P99Ratio, control.P99Ratio, t.P99RatioMed, control.P99RatioMed, verdict)
		if f, ok := top["floor"]; ok && target.key != "tasks-wait" {
			p("The floor, the same service without worksteal whose own goroutine burns 2 ms at a time %d times a second, reads %.2f (median of the rounds %.2f) at %s bursts/s: CPU work inside the service costs its requests that much on this machine whatever runs it, since the load generator shares its 2 cores (a core that burns leaves one for the generator, the service's requests and Redis). The tasks are %.2f (median %.2f) of the floor.",
				floorRate, f.P99Ratio, f.P99RatioMed, num(float64(f.Processed)/max(f.Busy.Seconds(), 1e-9)), t.P99Ratio/f.P99Ratio, t.P99RatioMed/f.P99RatioMed)
		}
	}
}

// withinControl reports whether c's p99 ratio to no middleware is at most
// the control's plus 0.05, both for the rounds pooled and for the median
// of the rounds' own ratios: a burst of the machine's other work in one
// round of the control must not pass a variant.
func withinControl(c, control costRow) bool {
	return c.P99Ratio <= control.P99Ratio+0.05 && c.P99RatioMed <= control.P99RatioMed+0.05
}

func (r *report) redisSection(p func(string, ...any)) {
	if len(r.redis) == 0 {
		return
	}
	_, _, warmup, window := redisPlan(r.opts.quick)
	p("")
	p("### Redis cost as the fleet and the traffic grow")
	p("")
	p("N services with the queue jobs, at fixed rates (Drain rate %.2f, Every %v; TidyStale and PromoteDue rate %.2f, Every %v: the rows \"fixed rates\", as before automatic pace was the default) or under the automatic pace (the same `Every`s, no `Rate`: what users get), default batches and budget, a producer enqueuing %d items/s (64 B). Each row: %v of warm-up, %v measured. Redis commands come from `INFO commandstats` deltas and count the commands scripts run inside (a script call is its `EVALSHA` plus its inner commands); the producer's share, %d commands per 100 ms batch measured on a scratch queue, is taken out. Round trips are counted by the services' clients: the recruiter's (lock, probe, cooldown, release: \"lock traffic\") and the jobs' (claim, settle, tidy, promote). Stolen items: drained + tidied + promoted. (`%s`)",
		drainRate, drainEvery, tidyRate, tidyEvery, producerRate, warmup, window, r.producerBatch.Calls, r.command())
	p("")
	p("| pace | N | req/s | Redis cmds/s | Redis ms/s in scripts | cmds per 1,000 req | round trips per 1,000 req | lock round trips/s per process | stolen items/s | cmds per item | queue round trips per item |")
	p("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.redis {
		pace := "fixed rates"
		if x.Paced {
			pace = "automatic"
		}
		p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |", pace, x.N, num(x.ReqPerSec), num(x.CmdsPerSec), num(x.RedisMsPerSec), num(x.CmdsPer1kReq), num(x.RTPer1kReq),
			num(x.LockRTPerProc), num(x.ItemsPerSec), num(x.CmdsPerItem), num(x.QueueRTPerItem))
	}
	p("")
	bound := lockBound()
	p("The bound: per job and per `Every`, a process makes at most two attempts, each a lock call and then a probe (or the cooldown, if it ran the slice): one that may find a slice running, and one, once it ends, that finds the cooldown; in between it cools off locally and asks Redis nothing. With these three jobs that is %.0f round trips/s per process whatever the request rate; typically half, one attempt per job per `Every`. More traffic only makes each process reach its next attempt sooner after a cooldown ends, so lock traffic rises with the first requests and then stays flat. (A drain slice that reports a backlog releases its lock and the next one starts at once: that traffic follows the work, not the requests.) Under the automatic pace the bound is the fleet's, not each process's: the fleet visits each job about %.1f times per `Every` in all (docs/pacing.md), so a process's share falls as the fleet grows, and a backlog brings its job back sooner (a streak), again following the work.", bound, visits)
	p("")
	p("![lock round trips per second per process vs request rate](bench/results/fleet-lock.svg)")
}

func (r *report) healthSection(p func(string, ...any)) {
	if len(r.health) == 0 {
		return
	}
	inject, grace := healthPlan(r.opts.quick)
	p("")
	p("### Queue health: stolen work vs a dedicated daemon")
	p("")
	p("The same workload for each row: %d services receiving the given traffic, a producer enqueuing %d items/s, and an injector that every %v claims one item and abandons it with a %v lease (a crashed worker), for %v, then %v more to let the last leases come back. Stolen work: the services run Drain, TidyStale and PromoteDue as above. Daemon: the services have no middleware and one more process loops on a ticker, running slices of the same jobs (same batches, same 50 ms budget) at the same pace (drain every %v while a backlog remains, tidy and promote every %v). Return time: from an abandoned lease's deadline to the moment the item is claimed again. Depth: pending + leased, sampled every 250 ms. Maintainers' round trips: the services' recruiter and job clients, or the daemon's. Redis commands per item: everything but the producer (injector and sampler included, alike in every row). (`%s`)",
		healthFleet, producerRate, injectEvery, injectLease, inject, grace, drainEvery, tidyEvery, r.command())
	p("")
	p("| scenario | abandoned | returned | return p50 | return p99 | return max | depth mean | depth max | items/s | draws / slices | maintainers' round trips per item | lock round trips/s | Redis cmds per item |")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var stolen, daemon *healthResult
	for i, h := range r.health {
		switch h.Scenario.Key {
		case "stolen":
			stolen = &r.health[i]
		case "daemon":
			daemon = &r.health[i]
		}
		draws := "—" // the daemon is not drawn
		if !h.Scenario.Daemon {
			draws = fmt.Sprintf("%s / %s", num(float64(h.Drawn)), num(float64(h.Slices)))
		}
		p("| %s | %d | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |", h.Scenario.Label, h.Injected, h.Injected-h.Unreturned, msOr(h.P50, len(h.Returns) > 0), msOr(h.P99, len(h.Returns) > 0), msOr(h.Max, len(h.Returns) > 0),
			num(h.MeanDepth), h.MaxDepth, num(h.ItemsPerSec), draws, num(h.MaintRTPerItem), num(h.LockRTPerSecond), num(h.CmdsPerItem))
	}
	if stolen != nil && daemon != nil && daemon.P99 > 0 && daemon.P50 > 0 {
		ratio := float64(stolen.P99) / float64(daemon.P99)
		verdict := "**met**"
		if ratio > 2 {
			verdict = "**not met**"
		}
		p("")
		p("Target: stolen work keeps a stale lease's return time within 2x the daemon's while the fleet has traffic: p99 %s vs %s, ratio %.2f (p50 ratio %.2f): %s.",
			ms(stolen.P99), ms(daemon.P99), ratio, float64(stolen.P50)/float64(daemon.P50), verdict)
	}
	low := (drainRate + tidyRate + promoteRate) * 2 * (inject + grace).Seconds()
	p("")
	p("At 2 req/s the fleet draws a job about (%.2f + %.2f + %.2f) × 2 × %v ≈ %.1f times in a run, by chance: one drawn drain may clear the backlog, or none may come, so that row varies widely from run to run (draws / slices shows this run's luck). That is the case for automatic pace (`Every` alone): its timer makes the planned visits that no request made, and the work no longer depends on traffic.",
		drainRate, tidyRate, promoteRate, (inject + grace).Round(time.Second), low)
	p("")
	p("![queue depth over time](bench/results/fleet-depth.svg)")
	p("")
	p("![distribution of stale-lease return times](bench/results/fleet-returns.svg)")
}

func (r *report) scaleSection(p func(string, ...any)) {
	if len(r.scale) == 0 {
		return
	}
	p("")
	p("### Tidy and drain as the queue grows")
	p("")
	p("A queue holding the given number of items (64 B). TidyStale: up to 5,000 of them (half the queue at most) claimed with a 1 ms lease, then slices (default batch %d, 50 ms budget, as the recruiter runs them) until all are back. Drain: slices (batch %d, a handler that does nothing) until as many items are done. Per batch: wall time of one script call (Drain: one claim + one settle) seen by the job, and Redis's own time for it (`INFO commandstats`). (`%s`)", 500, 100, r.command())
	p("")
	p("| job | items queued | items | slices | round trips | per batch | Redis per batch | per item | round trips per item |")
	p("|---|---|---|---|---|---|---|---|---|")
	for _, s := range r.scale {
		p("| %s | %s | %s | %d | %d | %s | %s | %s | %.3f |", s.Job, num(float64(s.Depth)), num(float64(s.Items)), s.Slices, s.RoundTrips, ms(s.PerBatch), ms(s.RedisPerBatch), ms(s.PerItem), s.RTPerItem)
	}
}
