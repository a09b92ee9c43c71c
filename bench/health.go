package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/worksteal/worksteal/queue"
)

// scenario is one way of keeping the queue in experiment 3.
type scenario struct {
	Key, Label string
	Rate       float64 // requests/s across the fleet
	Daemon     bool
	Paced      bool // the queue's jobs by Every alone (automatic pace and its timer), not fixed rates
}

// healthFleet is the fleet size of experiment 3.
const healthFleet = 2

// The stale-lease injection: every injectEvery the injector claims one
// item and abandons it, with a lease of injectLease.
const (
	injectEvery = 100 * time.Millisecond
	injectLease = time.Second
)

var scenarios = []scenario{
	{"stolen", "stolen work, 1,000 req/s", 1000, false, false},
	{"daemon", "dedicated daemon, 1,000 req/s", 1000, true, false},
	{"stolen-low", "stolen work, 2 req/s", 2, false, false},
	{"stolen-low-paced", "stolen work, 2 req/s, jobs paced by Every (pace timer)", 2, false, true},
	{"stolen-paced", "stolen work, 1,000 req/s, jobs paced by Every (automatic pace)", 1000, false, true},
}

// depthSample is one reading of the queue.
type depthSample struct {
	At               time.Duration // since the scenario began
	Pending, Leased  int64
	Expired, Delayed int64
}

// healthResult is one scenario's figures.
type healthResult struct {
	Scenario        scenario
	Returns         []time.Duration // stale lease expired → item claimed again
	Injected        int
	Unreturned      int
	P50, P99, Max   time.Duration
	Depth           []depthSample
	MeanDepth       float64
	MaxDepth        int64
	ItemsPerSec     float64 // handled by the drain
	MaintRTPerItem  float64 // the maintainers' round trips (locks and queue calls) per item
	CmdsPerItem     float64 // Redis commands per item, producer's excluded
	LockRTPerSecond float64
	Drawn, Slices   int64 // the fleet's draws of the jobs, and the slices run
}

func healthPlan(quick bool) (inject, grace time.Duration) {
	if quick {
		return 4 * time.Second, injectLease + 1500*time.Millisecond
	}
	return 30 * time.Second, injectLease + 3*time.Second
}

// runHealth is experiment 3: the same workload (a producer, abandoned
// leases) kept by stolen work or by a daemon, then at a low request rate
// with fixed rates and with automatic pace (its timer covers a quiet fleet).
func runHealth(ctx context.Context, e *env, rep *report) error {
	inject, grace := healthPlan(e.opts.quick)
	perBatch, err := batchCost(ctx, e, producerRate)
	if err != nil {
		return err
	}
	for _, sc := range scenarios {
		if err := e.rdb.FlushAll(ctx).Err(); err != nil {
			return err
		}
		res, err := runScenario(ctx, e, sc, inject, grace, perBatch)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Key, err)
		}
		logf("health: %s: return p50 %v p99 %v (%d/%d returned), depth mean %.0f max %d, %.0f items/s",
			sc.Key, res.P50.Round(time.Millisecond), res.P99.Round(time.Millisecond), res.Injected-res.Unreturned, res.Injected,
			res.MeanDepth, res.MaxDepth, res.ItemsPerSec)
		rep.health = append(rep.health, res)
	}
	return nil
}

// injection is an item the injector claimed and abandoned.
type injection struct {
	id       string
	attempt  int
	deadline time.Time
}

func runScenario(ctx context.Context, e *env, sc scenario, inject, grace time.Duration, perBatch cmdStat) (healthResult, error) {
	res := healthResult{Scenario: sc}
	var procs []*proc
	defer func() { stopAll(procs) }()
	for i := range healthFleet {
		args := []string{"-mw", "queue", "-prefix", "hq"}
		if sc.Daemon {
			args = []string{"-mw", "none", "-prefix", "hq"}
		}
		if sc.Paced {
			args = append(args, "-paced")
		}
		p, err := e.startProc(ctx, "service", fmt.Sprintf("health-%s-%d", sc.Key, i), args...)
		if err != nil {
			return res, err
		}
		procs = append(procs, p)
	}
	maintainers := procs
	if sc.Daemon {
		d, err := e.startProc(ctx, "daemon", "health-daemon", "-prefix", "hq")
		if err != nil {
			return res, err
		}
		procs = append(procs, d)
		maintainers = []*proc{d}
	}
	crdb, _ := newCountedClient(e.addr, 8)
	defer crdb.Close()
	q, err := queue.New(crdb, queueName, queue.Config{Prefix: "hq"})
	if err != nil {
		return res, err
	}
	abandon, err := queue.New(crdb, queueName, queue.Config{Prefix: "hq", Lease: injectLease})
	if err != nil {
		return res, err
	}
	s0, err := commandStats(ctx, e.rdb)
	if err != nil {
		return res, err
	}
	began := time.Now()
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	prod := &producer{q: q, rate: producerRate}
	var wg sync.WaitGroup
	wg.Go(func() { prod.run(wctx) })
	g := newLoadGen()
	defer g.close()
	waitLoad := g.background(wctx, addrs(procs[:healthFleet]), sc.Rate)
	var (
		injections []injection
		seen       []returnSeen // re-claims by the injector itself
	)
	ictx, stopInject := context.WithTimeout(wctx, inject)
	defer stopInject()
	wg.Go(func() {
		tick := time.NewTicker(injectEvery)
		defer tick.Stop()
		for {
			select {
			case <-ictx.Done():
				return
			case <-tick.C:
			}
			if _, err := abandon.Enqueue(ictx, []byte("abandoned")); err != nil {
				continue
			}
			items, err := abandon.Claim(ictx, 1)
			if err != nil {
				continue
			}
			for _, it := range items {
				if it.Attempt > 1 {
					seen = append(seen, returnSeen{ID: it.ID, Attempt: it.Attempt, At: time.Now().UnixNano()})
				}
				injections = append(injections, injection{it.ID, it.Attempt, it.Deadline})
			}
		}
	})
	sampleCtx, stopSampling := context.WithTimeout(wctx, inject+grace)
	defer stopSampling()
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			st, err := q.Depth(sampleCtx)
			if err == nil {
				res.Depth = append(res.Depth, depthSample{time.Since(began), st.Pending, st.Leased, st.Expired, st.Delayed})
			}
		}
	})
	<-sampleCtx.Done()
	if err := ctx.Err(); err != nil {
		stopWork()
		waitLoad()
		wg.Wait() // the sampler appends to res.Depth until then
		return res, err
	}
	elapsed := time.Since(began)
	f, all, err := fetchFleet(ctx, maintainers)
	s1, err2 := commandStats(ctx, e.rdb)
	batches := prod.count()
	stopWork()
	waitLoad()
	wg.Wait()
	if err := cmp.Or(err, err2); err != nil {
		return res, err
	}
	for _, s := range all {
		seen = append(seen, s.Returns...)
	}
	res.joinReturns(injections, seen)
	res.summarise(elapsed, f, deltaStats(s0, s1), batches, perBatch)
	return res, nil
}

// joinReturns matches each abandoned claim with the next claim of the
// same item: its stale lease's return time is that claim's moment less
// the lease's deadline.
func (r *healthResult) joinReturns(injections []injection, seen []returnSeen) {
	type key struct {
		id      string
		attempt int
	}
	at := map[key]int64{}
	for _, s := range seen {
		k := key{s.ID, s.Attempt}
		if t, ok := at[k]; !ok || s.At < t {
			at[k] = s.At
		}
	}
	r.Injected = len(injections)
	for _, in := range injections {
		t, ok := at[key{in.id, in.attempt + 1}]
		if !ok {
			r.Unreturned++
			continue
		}
		r.Returns = append(r.Returns, max(time.Unix(0, t).Sub(in.deadline), 0))
	}
	slices.Sort(r.Returns)
	if n := len(r.Returns); n > 0 {
		r.P50 = r.Returns[quantileIndex(n, 0.5)]
		r.P99 = r.Returns[quantileIndex(n, 0.99)]
		r.Max = r.Returns[n-1]
	}
}

func quantileIndex(n int, q float64) int {
	return min(max(int(q*float64(n)+0.5)-1, 0), n-1)
}

func (r *healthResult) summarise(elapsed time.Duration, f fleetStats, d statsDelta, batches int64, perBatch cmdStat) {
	var sum float64
	for _, s := range r.Depth {
		depth := s.Pending + s.Leased
		sum += float64(depth)
		r.MaxDepth = max(r.MaxDepth, depth)
	}
	if len(r.Depth) > 0 {
		r.MeanDepth = sum / float64(len(r.Depth))
	}
	r.ItemsPerSec = float64(f.Processed) / elapsed.Seconds()
	r.LockRTPerSecond = float64(f.LockRT) / elapsed.Seconds()
	r.Drawn, r.Slices = f.Drawn, f.Slices
	calls, _ := d.total()
	calls -= batches * perBatch.Calls
	if f.Processed > 0 {
		r.MaintRTPerItem = float64(f.LockRT+f.QueueRT) / float64(f.Processed)
		r.CmdsPerItem = float64(calls) / float64(f.Processed)
	}
}
