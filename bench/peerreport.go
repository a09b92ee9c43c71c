package main

import (
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

var peersMarks = marks{"<!-- peers:begin -->", "<!-- peers:end -->"}

// peerResults are the runs by experiment and system label, in order.
type peerResults struct {
	runs   map[string]map[string][]peerResult
	labels map[string][]string // per experiment, the labels in run order
}

func (p *peerResults) add(exp, label string, r peerResult) {
	if p.runs == nil {
		p.runs, p.labels = map[string]map[string][]peerResult{}, map[string][]string{}
	}
	if p.runs[exp] == nil {
		p.runs[exp] = map[string][]peerResult{}
	}
	if _, ok := p.runs[exp][label]; !ok {
		p.labels[exp] = append(p.labels[exp], label)
	}
	p.runs[exp][label] = append(p.runs[exp][label], r)
}

func (r peerResult) summary(x peerExp) string {
	once := "every task once"
	if !r.exact() {
		once = fmt.Sprintf("NOT every task once: %d duplicates, %d missing, %d left, %d errors", r.dups, r.missing, r.left, r.errors)
	}
	if r.hist != nil {
		return fmt.Sprintf("%d tasks, p50 %v, p99 %v; %s", r.n, ms(r.hist.quantile(0.5)), ms(r.hist.quantile(0.99)), once)
	}
	return fmt.Sprintf("%d tasks, %s/s; %s", r.n, num(r.rate), once)
}

// rates is the median, lowest and highest rate of the rounds; ok is false
// when the system did not run the experiment.
func (p peerResults) rates(exp, label string) (med, lo, hi float64, ok bool) {
	rs := p.runs[exp][label]
	if len(rs) == 0 {
		return 0, 0, 0, false
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = r.rate
	}
	return medianF(v, func(x float64) float64 { return x }), slices.Min(v), slices.Max(v), true
}

// ratio is the median of a over the median of b, and the lowest and
// highest of the rounds' own ratios (round i of a against round i of b,
// run minutes apart at most).
func (p peerResults) ratio(exp, a, b string) (med, lo, hi float64, ok bool) {
	ma, _, _, okA := p.rates(exp, a)
	mb, _, _, okB := p.rates(exp, b)
	if !okA || !okB || mb == 0 {
		return 0, 0, 0, false
	}
	ra, rb := p.runs[exp][a], p.runs[exp][b]
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range min(len(ra), len(rb)) {
		x := ra[i].rate / rb[i].rate
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return ma / mb, lo, hi, true
}

// pooledLatency merges the rounds' histograms.
func (p peerResults) pooledLatency(exp, label string) (*histogram, []peerResult) {
	rs := p.runs[exp][label]
	if len(rs) == 0 {
		return nil, nil
	}
	var ls []loadResult
	for _, r := range rs {
		ls = append(ls, loadResult{hist: r.hist})
	}
	return pool(ls), rs
}

// onceAll says whether every run counted every task exactly once, and
// sums what went wrong where not.
func onceAll(rs []peerResult) string {
	var d, m, l, e int64
	for _, r := range rs {
		d, m, l, e = d+r.dups, m+r.missing, l+r.left, e+r.errors
	}
	if d+m+l+e == 0 {
		return "yes"
	}
	return fmt.Sprintf("**no**: %d duplicates, %d never run, %d left in the store, %d errors", d, m, l, e)
}

// depVersion is the version of a module this binary was built with.
func depVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "?"
}

func rangeOf(med, lo, hi float64, rounds int) string {
	if rounds < 2 {
		return num(med)
	}
	return fmt.Sprintf("%s (%s–%s)", num(med), num(lo), num(hi))
}

func peersMarkdown(o options, exps []peerExp, plan peerPlan, machine string, took time.Duration, res peerResults) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	cmd := "make bench-peers"
	switch {
	case o.quick:
		cmd = "go run ./bench -peers -quick"
	case o.long:
		cmd = "make bench-peers ARGS=-long"
	}
	some := len(o.peerExps) > 0 // some rows only, printed: no plots
	if some {
		args := "-peer-exps " + strings.Join(slices.Sorted(maps.Keys(o.peerExps)), ",")
		switch {
		case o.quick:
			args = "-quick " + args
		case o.long:
			args = "-long " + args
		}
		cmd = fmt.Sprintf("make bench-peers ARGS='%s'", args)
	}
	has := func(kinds ...expKind) bool {
		return slices.ContainsFunc(exps, func(x peerExp) bool { return slices.Contains(kinds, x.kind) })
	}
	p("## Peers: worksteal, asynq and River on the same tasks (`%s`)", cmd)
	p("")
	p("Written by `bench/` (`%s`, %v on %s); do not edit this section by hand, rerun the command.", cmd, took.Round(time.Second), time.Now().Format("2006-01-02"))
	p("Machine: %s. The machine is shared with other work: compare figures of the same run only.", machine)
	p("")
	p("One program (this one, `-peers`) starts a throw-away redis-server (no persistence; worksteal in database 0, asynq in database 1) and a throw-away PostgreSQL cluster (initdb into a temporary folder, run as an unprivileged user it creates when run as root, `fsync`, `synchronous_commit` and `full_page_writes` off, as the Redis server keeps nothing on disk either), then runs worksteal (this checkout), asynq %s and River %s (riverpgxv5, pgx %s, a pool of 32 connections) on the same tasks, in the same process, one system at a time: %d rounds, each running every experiment on every system in turn (A, B, C, A, B, C, ...), so that the machine's noise falls on all alike. Figures are the median of the rounds, with the lowest and highest in brackets. Every task carries a number, and each run counts every number's runs: \"every task once\" means no task ran twice or never, no enqueue failed, and the store held no task after the run (nothing pending, running, to retry or dead).",
		depVersion("github.com/hibiken/asynq"), depVersion("github.com/riverqueue/river"), depVersion("github.com/jackc/pgx/v5"), plan.rounds)
	if o.quick {
		p("")
		p("**Quick run (`-quick`): small runs, for development only; not figures to quote.**")
	}
	if has(expEnqueue, expProcess) {
		peerThroughput(p, exps, res, !some)
	}
	if has(expLatency, expCall) {
		peerLatencies(p, exps, plan, res, !some)
	}
	peerTargets(p, res, some)
	return b.String()
}

// peerThroughput writes the enqueue and processing rows of exps, and the
// plot's link with plot.
func peerThroughput(p func(string, ...any), exps []peerExp, res peerResults, plot bool) {
	p("")
	p("### Throughput")
	p("")
	p("Enqueue: tasks of a few bytes of JSON, one enqueue call each from 1 or 8 goroutines, or the system's batch call with 1,000 tasks (worksteal `EnqueueMany`, River `InsertManyFast`; asynq has none), timed from the first call to the last answer. Processing: the queue filled first (untimed), then the workers started and timed from their start to the end of the last task's handler. worksteal's workers are a dedicated worker, `mux.Serve(ctx, q, tasks.WorkerConfig{Concurrency: workers})`: the typed-task job's slices back to back (2 s each), each claim whole waves of that many handlers at once. asynq: a server with `Concurrency` set to the workers; River: a client with `MaxWorkers` set to them and its least `FetchCooldown`, %v (River fetches at most once per cooldown: at its default, 100 ms, one worker would do 10 tasks/s), and `FetchPollInterval` %v (as soon as `Mux.Serve` looks again after a slice that found nothing; its default is 1 s), the rest at their defaults. Tasks per run differ by system (each run a second or more of its work) and are given in the last column.", riverFetchCooldown, riverFetchPoll)
	p("")
	p("| experiment | worksteal (tasks/s) | asynq (tasks/s) | River (tasks/s) | worksteal / asynq | worksteal / River | tasks per run (worksteal / asynq / River) | every task once |")
	p("|---|---|---|---|---|---|---|---|")
	systems := []string{"worksteal", "asynq", "River"}
	for _, x := range exps {
		if x.kind != expEnqueue && x.kind != expProcess {
			continue
		}
		cells := make([]string, 0, 8)
		cells = append(cells, x.label)
		var all []peerResult
		var sizes []string
		for _, s := range systems {
			med, lo, hi, ok := res.rates(x.key, s)
			if !ok {
				cells = append(cells, "none offered")
				sizes = append(sizes, "—")
				continue
			}
			cells = append(cells, rangeOf(med, lo, hi, len(res.runs[x.key][s])))
			sizes = append(sizes, count(int(res.runs[x.key][s][0].n)))
			all = append(all, res.runs[x.key][s]...)
		}
		for _, other := range systems[1:] {
			if med, lo, hi, ok := res.ratio(x.key, "worksteal", other); ok {
				cells = append(cells, fmt.Sprintf("%.2f× (%.2f–%.2f)", med, lo, hi))
			} else {
				cells = append(cells, "—")
			}
		}
		cells = append(cells, strings.Join(sizes, " / "), onceAll(all))
		p("| %s |", strings.Join(cells, " | "))
	}
	if plot {
		p("")
		p("![tasks per second, per experiment and system](bench/results/peers-throughput.svg)")
	}
}

// peerLatencies writes the latency and Call rows of exps, and the plot's
// link with plot.
func peerLatencies(p func(string, ...any), exps []peerExp, plan peerPlan, res peerResults, plot bool) {
	p("")
	p("### Enqueue → start, and Call")
	p("")
	p("Tasks enqueued open-loop at %d/s (each enqueue on its own goroutine, at its due time) into a running system at its defaults, for %v of warm-up then %v measured; the latency of a task is from the start of its enqueue call to the start of its handler, over the window's tasks of all rounds pooled. worksteal as README wires it: `recruiter.New(rdb, recruiter.Config{})`, the tasks job registered with `recruiter.JobConfig{Every: time.Second}` and no `Rate`, `stealhttp.Middleware(rec)` on a net/http server, and %d fast exits/s (`recruiter.MarkFastExit`) from an open-loop load on it; and the same with no request at all, so its pace timer alone runs the job. The tasks are enqueued in the process that works them, as for asynq and River here: worksteal's enqueue then rings its queue's bell in that process, and the recruiter visits the job at once (local wake-up, at most 50 woken visits a second); in the row \"remote enqueue\" the same tasks come from a second process (this program with `-role enqueuer`), whose enqueues ring no bell in the worker's, so the job starts them at its next visit (the automatic pace: about once per `Every`, sooner while a backlog lasts). asynq: `asynq.Config{}` (Concurrency: the number of CPUs, a 1 s `TaskCheckInterval` when its queues are empty). River: `MaxWorkers: %d` (its documentation's example; River has no default), its fetch cooldown and poll interval at their defaults (100 ms and 1 s), notified of inserts by PostgreSQL. Call: worksteal's `Task.Call` (enqueue, then wait for the result), at %d/s in the same wiring, from the call's start to its return; asynq and River offer no call that waits for a result. The rows \"a dedicated worker\" run each system as the processing rows do, with as many workers: worksteal's `Mux.Serve` (a remote enqueue rings no bell in the worker, which looks again %v after a slice that found nothing, then less often, up to 100 ms, while the queue stays empty), asynq's server with that `Concurrency` (its 1 s `TaskCheckInterval` kept), River with that `MaxWorkers`, a fetch cooldown of %v and a poll interval of %v.",
		peerRate, plan.warmup, plan.window, wsFastExits, riverDefaultWorkers, peerRate, idlePoll, riverFetchCooldown, riverFetchPoll)
	p("")
	p("| what | system | p50 | p99 | p99.9 | max | tasks measured | every task once |")
	p("|---|---|---|---|---|---|---|---|")
	for _, x := range exps {
		if x.kind != expLatency && x.kind != expCall {
			continue
		}
		what := "enqueue → start"
		switch {
		case x.kind == expCall:
			what = "Call"
		case !x.run.defaults:
			what = fmt.Sprintf("enqueue → start, a dedicated worker of %d", x.run.workers)
		}
		for _, label := range res.labels[x.key] {
			h, rs := res.pooledLatency(x.key, label)
			p("| %s | %s | %s | %s | %s | %s | %s | %s |", what, label, ms(h.quantile(0.5)), ms(h.quantile(0.99)), ms(h.quantile(0.999)), ms(time.Duration(h.max.Load())), count(int(h.n.Load())), onceAll(rs))
		}
	}
	if plot {
		p("")
		p("![enqueue → start and Call latency](bench/results/peers-latency.svg)")
	}
}

// peerTargets writes issue 28's and 40's targets, each against its
// baseline of the same run; with some (some rows only), those measured.
func peerTargets(p func(string, ...any), res peerResults, some bool) {
	p("")
	p("### Targets")
	p("")
	p("Each against its baseline in the same run; a miss is written as a miss. (The fleet's p99 target under the automatic pace is in the fleet section, `make bench-fleet`, \"Under pressure\".)")
	p("")
	p("| target | measured (median; rounds' range) | met |")
	p("|---|---|---|")
	row := func(what, exp string, want float64) {
		med, lo, hi, ok := res.ratio(exp, "worksteal", "asynq")
		if !ok {
			if !some {
				p("| %s | not measured | — |", what)
			}
			return
		}
		met := "**met**"
		if med < want {
			met = "**missed**"
		}
		// Three decimals: a verdict must not hang on a rounding.
		p("| %s | %.3f× (%.3f–%.3f) | %s |", what, med, lo, hi, met)
	}
	row("no-op processing ≥ 10× asynq, 1 worker", "noop-1", 10)
	row("no-op processing ≥ 10× asynq, 8 workers", "noop-8", 10)
	row("tasks that wait 50 ms ≥ 1.0× asynq, 8 workers", "wait-8", 1)
	// Issue 40: a dedicated worker against the ideal, 32 / 50 ms = 640/s.
	if med, lo, hi, ok := res.rates("wait-32", "worksteal"); ok {
		met := "**met**"
		if med < 500 {
			met = "**missed**"
		}
		p("| tasks that wait 50 ms ≥ 500/s, 32 workers (`Mux.Serve`; 640/s at best) | %s/s (%s–%s) | %s |", num(med), num(lo), num(hi), met)
	} else if !some {
		p("| tasks that wait 50 ms ≥ 500/s, 32 workers (`Mux.Serve`) | not measured | — |")
	}
	row("enqueue ≥ 1.0× asynq, 1 goroutine", "enqueue-1", 1)
	row("enqueue ≥ 1.0× asynq, 8 goroutines", "enqueue-8", 1)
}

// peerCharts plots the throughputs and the latencies.
func peerCharts(res peerResults) map[string]barChart {
	systems := []string{"worksteal", "asynq", "River"}
	tp := barChart{Title: "Peers: tasks per second (log), median of the rounds, whiskers: lowest to highest", YLabel: "tasks per second (log)", Series: systems}
	short := map[string]string{"enqueue-1": "enqueue\n1 goroutine", "enqueue-8": "enqueue\n8 goroutines", "enqueue-batch": "enqueue\nbatches", "noop-1": "no-op\n1 worker", "noop-8": "no-op\n8 workers", "wait-8": "wait 50 ms\n8 workers", "noop-32": "no-op\n32 workers", "wait-32": "wait 50 ms\n32 workers"}
	tp.Values, tp.Lo, tp.Hi = make([][]float64, len(systems)), make([][]float64, len(systems)), make([][]float64, len(systems))
	for _, x := range peerExps {
		if x.kind != expEnqueue && x.kind != expProcess {
			continue
		}
		tp.Groups = append(tp.Groups, short[x.key])
		for i, s := range systems {
			med, lo, hi, ok := res.rates(x.key, s)
			if !ok {
				med, lo, hi = math.NaN(), math.NaN(), math.NaN()
			}
			tp.Values[i], tp.Lo[i], tp.Hi[i] = append(tp.Values[i], med), append(tp.Lo[i], lo), append(tp.Hi[i], hi)
		}
	}
	lat := barChart{Title: "Peers: latency at 500 tasks/s, ms (log), all rounds pooled", YLabel: "ms (log)"}
	lat.Series = res.labels["latency"]
	lat.Groups = []string{"enqueue → start\np50", "enqueue → start\np99", "Call\np50", "Call\np99"}
	for _, label := range lat.Series {
		var v []float64
		for _, exp := range []string{"latency", "call"} {
			h, _ := res.pooledLatency(exp, label)
			if h == nil {
				v = append(v, math.NaN(), math.NaN())
				continue
			}
			v = append(v, float64(h.quantile(0.5))/1e6, float64(h.quantile(0.99))/1e6)
		}
		lat.Values = append(lat.Values, v)
	}
	return map[string]barChart{"peers-throughput.svg": tp, "peers-latency.svg": lat}
}
