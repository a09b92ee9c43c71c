package faults_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

const (
	// slowDelay is what the proxy adds to every reply: far above every
	// timeout and budget below, so that any call that waited for a reply
	// would stand out, and above latencyBound and sliceBound, which leave
	// a loaded machine most of a second of scheduling delay.
	slowDelay        = 2 * time.Second
	slowBudget       = 50 * time.Millisecond
	slowDrainTimeout = 100 * time.Millisecond // DrainConfig.RedisTimeout
	slowPhase        = 2 * time.Second
	dropPhase        = 1500 * time.Millisecond
	// sliceBound is the longest a drain slice may take: its budget, then
	// at most two queue calls cut at their timeout (a claim, then a
	// settle or release), and scheduling slack for a loaded machine (a
	// second: a process stall of ~300ms was seen on a busy 2-core CI
	// machine). It is below slowDelay: no slice waited for a delayed reply.
	sliceBound = slowBudget + 2*slowDrainTimeout + time.Second
)

// TestSlowAndDroppingRedis puts a proxy between the recruiters and Redis
// that first delays every reply by a second, then cuts every connection,
// while the three stacks serve requests. Two recruiters wrap each server:
// "locks" reaches Redis only through the proxy (its lock calls time out:
// errors, breaker); "drain" takes its locks directly but drains a queue
// through the proxy (its slices end at their budget, counted as timeouts
// or errors). Requests stay fast and successful, slices stay bounded, and
// once the load stops every goroutine that served or stole work ends.
//
// Not parallel: it counts the process's goroutines.
func TestSlowAndDroppingRedis(t *testing.T) {
	srv := redistest.Start(t)
	baseline := runtime.NumGoroutine()
	leakOpt := goleak.IgnoreCurrent()
	var peak int
	t.Run("load", func(t *testing.T) { peak = slowAndDroppingLoad(t, srv) })
	// The subtest's cleanups closed its servers, clients, proxy and
	// recruiters: what remains of them is a leak.
	testrig.Eventually(t, 10*time.Second, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= baseline })
	goleak.VerifyNone(t, leakOpt)
	t.Logf("goroutines: %d before the load, %d at its peak, %d after", baseline, peak, runtime.NumGoroutine())
}

// slowAndDroppingLoad runs the phases and returns the peak goroutine count.
func slowAndDroppingLoad(t *testing.T, srv *redistest.Server) int {
	ctx := testrig.Context(t, time.Minute)
	proxy := redistest.StartFaultProxy(t, srv.Addr())
	prefix := redistest.Prefix(t)

	slowRDB, slowDials := countedClient(t, srv, proxy.Addr())
	directRDB, _ := countedClient(t, srv, srv.Addr())
	lockLogs := &logBuffer{}
	locks := newRecruiter(t, slowRDB, recruiter.Config{Prefix: prefix + "-locks", RedisTimeout: 200 * time.Millisecond,
		BreakerThreshold: 3, BreakerCooldown: 300 * time.Millisecond, MaxConcurrent: 2, Logger: newLogger(lockLogs)})
	mustRegister(t, locks, recruiter.Func("tick", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{Items: 1}, nil
	}), recruiter.JobConfig{Rate: 0.5, Budget: slowBudget})

	q, err := queue.New(slowRDB, "slow", queue.Config{Prefix: prefix, Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, 2000)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	if _, err := q.EnqueueBatch(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	drain, err := jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return []byte("done"), nil },
		jobs.DrainConfig{Batching: jobs.Batching{Batch: 10, RedisTimeout: slowDrainTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	var longest atomic.Int64 // the longest drain slice, measured around the job
	drains := newRecruiter(t, directRDB, recruiter.Config{Prefix: prefix + "-drain", MaxConcurrent: 2})
	mustRegister(t, drains, recruiter.Func(drain.Name(), func(ctx context.Context) (recruiter.Report, error) {
		began := time.Now()
		defer func() {
			took := int64(time.Since(began))
			for old := longest.Load(); took > old && !longest.CompareAndSwap(old, took); old = longest.Load() {
			}
		}()
		return drain.Run(ctx)
	}), recruiter.JobConfig{Rate: 0.5, Budget: slowBudget})

	var loads []*load
	for _, st := range stacks {
		loads = append(loads, startLoad(t, st.serve(t, locks, drains), 20*time.Millisecond))
	}
	peak := runtime.NumGoroutine()
	ran := func() (uint64, uint64) { return jobStats(t, locks, "tick").Ran, jobStats(t, drains, drain.Name()).Ran }
	testrig.Eventually(t, 20*time.Second, "both jobs running before the faults", func() bool {
		a, b := ran()
		return a >= 5 && b >= 5
	})

	slowFrom := time.Now()
	before := jobStats(t, drains, drain.Name())
	proxy.SetDelay(slowDelay)
	time.Sleep(slowPhase) // the fault's length, not a wait for a condition
	peak = max(peak, runtime.NumGoroutine())
	dropFrom := time.Now()
	slowed := jobStats(t, drains, drain.Name())
	lockBreakerOpened := locks.Stats().BreakerOpen
	proxy.SetDelay(0)
	proxy.Drop()
	time.Sleep(dropPhase)
	peak = max(peak, runtime.NumGoroutine())
	healedAt := time.Now()
	dropped := jobStats(t, drains, drain.Name())
	ranA, ranB := ran()
	proxy.Heal()
	testrig.Eventually(t, 10*time.Second, "both jobs running again after healing", func() bool {
		a, b := ran()
		return a > ranA && b > ranB
	})
	resumed := time.Since(healedAt)
	for _, l := range loads {
		l.Stop()
	}
	for _, rec := range []*recruiter.Recruiter{locks, drains} {
		testrig.Eventually(t, 5*time.Second, "slices ended", func() bool { return rec.Stats().InFlight == 0 })
	}
	// Nothing of the recruiter, the jobs or the queue may outlive the load
	// but the recruiters' pace timers, until their Shutdown (the goleak
	// check after the subtest).
	var stolen []string
	testrig.Eventually(t, 5*time.Second, "no goroutine of stolen work left", func() bool {
		stolen = workGoroutines()
		return len(stolen) == 0
	})

	for i, l := range loads {
		name := stacks[i].name
		slow, drop := l.window(slowFrom, dropFrom), l.window(dropFrom, healedAt)
		t.Logf("%s: before %v; slow Redis %v; dropping %v; all %v", name,
			l.window(time.Time{}, slowFrom), slow, drop, l.all())
		if all := l.all(); all.failed != 0 {
			t.Errorf("%s: %d of %d requests failed; first: %v", name, all.failed, all.requests, all.firstErr)
		}
		for _, w := range []window{slow, drop} {
			if w.p99 > latencyBound {
				t.Errorf("%s: p99 latency %v while Redis was slow or dropping, above %v", name, w.p99, latencyBound)
			}
		}
	}
	lockStats := jobStats(t, locks, "tick")
	t.Logf("locks recruiter: %s; breaker opened while slow: %v; %d dials through the proxy, %d connections accepted",
		statsLine(lockStats), lockBreakerOpened, slowDials.Load(), proxy.Accepted())
	t.Logf("drain recruiter: slow phase +%d timeouts +%d errors; drop phase +%d timeouts +%d errors; longest slice %v (bound %v); resumed %v after healing; %s",
		slowed.Timeouts-before.Timeouts, slowed.Errors-before.Errors, dropped.Timeouts-slowed.Timeouts, dropped.Errors-slowed.Errors,
		time.Duration(longest.Load()).Round(time.Millisecond), sliceBound, resumed.Round(time.Millisecond), statsLine(jobStats(t, drains, drain.Name())))
	if !lockBreakerOpened || lockLogs.count("recruitment paused") == 0 {
		t.Errorf("the locks recruiter's breaker did not open on a Redis whose replies came %v late", slowDelay)
	}
	if slowed.Timeouts+slowed.Errors == before.Timeouts+before.Errors {
		t.Errorf("no drain slice timed out or failed while Redis was slow: %+v", statsLine(slowed))
	}
	if dropped.Timeouts+dropped.Errors == slowed.Timeouts+slowed.Errors {
		t.Errorf("no drain slice timed out or failed while connections dropped: %+v", statsLine(dropped))
	}
	if d := time.Duration(longest.Load()); d > sliceBound {
		t.Errorf("a drain slice took %v, above its bound %v: it waited on a slow reply", d, sliceBound)
	}
	return peak
}

// workGoroutines lists the goroutines running worksteal's recruiter, jobs
// or queue code, but for each recruiter's pace timer, which lives until
// Shutdown (the slices it starts run on goroutines of their own, listed).
func workGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "recruiter.(*Recruiter).timerLoop(") {
			continue
		}
		for _, pkg := range []string{"worksteal/worksteal/recruiter.", "worksteal/worksteal/jobs.", "worksteal/worksteal/queue."} {
			if strings.Contains(g, pkg) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}
