package security_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// The recruiter of the flood tests has two jobs: "every" runs at most once
// per Every; "rest", without Every, rests one budget after each slice.
// Those intervals bound its slices, whatever the requests.
const (
	everyInterval = time.Second
	restBudget    = 500 * time.Millisecond
)

// floodResult is what one flood measured.
type floodResult struct {
	requests   int
	took       time.Duration
	roundTrips int64            // commands the recruiter's client sent (all of them scripts)
	commands   int64            // Redis commands run, per INFO commandstats: the scripts and the commands inside them
	byCommand  map[string]int64 // the same, per command
	ran        map[string]uint64
	keys       []string // the key space afterwards
}

// bound is the design's bound on a process's recruiting round trips over
// d: per job, a slice per interval (plus the first) at two round trips
// (lock, then release or cooldown), as many again for skips (lock, probe)
// when the local cool-off ends a moment before Redis's cooldown key; and
// for each of the four scripts (obtain, release, cooldown, probe) a first
// EVALSHA that finds it not loaded, and its EVAL.
func bound(d time.Duration) int64 {
	perJob := func(interval time.Duration) int64 { return 4 * (int64(d/interval) + 1) }
	return perJob(everyInterval) + perJob(restBudget) + 8
}

// Margins of two floods of equal duration: each job's slices may differ by
// one at either end of the flood (2 round trips, 2 more if it skipped);
// one flood may meet a script's first load (a refused EVALSHA and its
// EVAL) that the other never needed, for the probe and one more; and
// each round trip runs one script of at most three commands.
const (
	roundTripMargin = 2*2*(2+2) + 4
	commandMargin   = 4 * roundTripMargin
)

// evilRequest is a request that tries every way a client might have to
// trigger, enlarge or aim stolen work.
func evilRequest(t *testing.T, base string, i int) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet,
		base+"/items/7?worksteal=run&job=rest&rate=1&budget=1h&every=0&enlist=1&fast_exit=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set("X-Worksteal-Job", "rest")
	h.Set("X-Worksteal-Rate", "1")
	h.Set("X-Worksteal-Budget", "3600s")
	h.Set("X-Worksteal-Every", "0")
	h.Set("X-Worksteal-Fast-Exit", "true")
	h.Set("X-Worksteal-Enlist", "always")
	h.Set("X-Worksteal-Prefix", "victim")
	h.Set("If-None-Match", "*")
	h.Set("Cache-Control", "only-if-cached")
	h.Set("Traceparent", fmt.Sprintf("00-%032x-%016x-01", i+1, i+1))
	h.Set("Cookie", "worksteal=recruit; job=every")
	if i%50 == 0 {
		h.Set("X-Worksteal-Padding", strings.Repeat("w", 8<<10)) // huge headers too
	}
	return req
}

// How a flood reaches the middleware.
const (
	overTCP   = true  // a real net/http server on loopback
	inProcess = false // ServeHTTP called directly, the request's context cancelled after it as the server does
)

// flood sends n evil requests, 8 at a time, through stealhttp's default
// classifier to a handler that answers each a fast exit (fast) or a plain
// 200, and measures the Redis traffic of the recruiter behind it. With
// spread > 0 the requests are paced evenly over it; else they go as fast
// as they can. In process, the middleware sees the same requests at ten
// times the rate that loopback TCP under -race allows, so 80,000 of them
// fit a test's time on a loaded machine.
func flood(t *testing.T, n int, fast, tcp bool, spread time.Duration) floodResult {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	trips := &redistest.RoundTrips{}
	rdb.AddHook(trips)
	rec, err := recruiter.New(rdb, recruiter.Config{
		Prefix: "flood", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var overBudget atomic.Int64
	job := func(name string, budget time.Duration) recruiter.Job {
		return recruiter.Func(name, func(ctx context.Context) (recruiter.Report, error) {
			// A slice's deadline is its budget, whatever the request said.
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > budget {
				overBudget.Add(1)
			}
			return recruiter.Report{Items: 1}, nil
		})
	}
	if err := rec.Register(job("every", 50*time.Millisecond), recruiter.JobConfig{Rate: 0.5, Every: everyInterval}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Register(job("rest", restBudget), recruiter.JobConfig{Rate: 0.5, Budget: restBudget}); err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fast {
			recruiter.MarkFastExit(r.Context()) // a cache hit
		}
		_, _ = io.WriteString(w, "item 7")
	})
	mw := stealhttp.Middleware(rec)(handler)
	base, send := "http://example.test", func(req *http.Request) int {
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		w := httptest.NewRecorder()
		mw.ServeHTTP(w, req.WithContext(ctx))
		return w.Code
	}
	var hs *httptest.Server
	if tcp {
		hs = httptest.NewServer(mw)
		client := hs.Client()
		base, send = hs.URL, func(req *http.Request) int {
			resp, err := client.Do(req)
			if err != nil {
				return 0
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
	}

	before := srv.CommandStats(t)
	began := time.Now()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if spread > 0 {
					time.Sleep(time.Until(began.Add(spread * time.Duration(i-1) / time.Duration(n)))) // pacing the load, not waiting for a result
				}
				if send(evilRequest(t, base, i)) != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	if hs != nil {
		hs.Close() // waits for the handlers: every slice has been handed on
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	after := srv.CommandStats(t)
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d requests failed or were not 200", f, n)
	}
	if o := overBudget.Load(); o != 0 {
		t.Fatalf("%d slices had a deadline past their budget", o)
	}

	res := floodResult{requests: n, took: took, roundTrips: trips.Load(), byCommand: map[string]int64{}, ran: map[string]uint64{}}
	for cmd, calls := range after {
		switch cmd {
		case "info", "hello", "client|setinfo": // the measurement's own, and connection set-up
			continue
		}
		if d := calls - before[cmd]; d != 0 {
			res.byCommand[cmd] = d
			res.commands += d
		}
	}
	for _, js := range rec.Stats().Jobs {
		res.ran[js.Name] = js.Ran
	}
	if res.keys, err = srv.Client(t).Keys(context.Background(), "*").Result(); err != nil {
		t.Fatal(err)
	}
	return res
}

// No header, query or cookie makes a request that is not a fast exit
// recruit: 2,000 such requests make no Redis command and run no slice.
func TestClientsCannotTriggerStolenWork(t *testing.T) {
	t.Parallel()
	res := flood(t, 2000, false, overTCP, 0)
	t.Logf("%d plain requests with worksteal-ish headers in %v: %d Redis commands %v, slices %v",
		res.requests, res.took.Round(time.Millisecond), res.commands, res.byCommand, res.ran)
	if res.commands != 0 || res.roundTrips != 0 || res.ran["every"]+res.ran["rest"] != 0 || len(res.keys) != 0 {
		t.Fatalf("requests that were not fast exits caused %d commands (%v), %d round trips, slices %v, keys %v; want none",
			res.commands, res.byCommand, res.roundTrips, res.ran, res.keys)
	}
}

// A flood of fast exits that try to enlarge or aim stolen work gets only
// the slices the jobs' intervals allow, each within its budget, on the two
// lock keys (and the registry of the jobs); and the Redis traffic does not grow with the requests: 80,000
// requests as fast as they go make no more round trips and commands than
// 20,000 paced over the same time, beyond boundary effects, and both stay
// within the design's bound.
func TestFastExitFloodCannotRaiseRedisTraffic(t *testing.T) {
	t.Parallel()
	large := flood(t, 80000, true, inProcess, 0)
	small := flood(t, 20000, true, inProcess, large.took)
	for _, r := range []floodResult{small, large} {
		t.Logf("%6d fast exits in %v (%.0f/s): %d round trips, bound %d; %d Redis commands %v; slices %v",
			r.requests, r.took.Round(time.Millisecond), float64(r.requests)/r.took.Seconds(),
			r.roundTrips, bound(r.took), r.commands, r.byCommand, r.ran)
		if r.ran["every"] == 0 || r.ran["rest"] == 0 {
			t.Errorf("%d requests: slices %v; want both jobs recruited, or the bound proves nothing", r.requests, r.ran)
		}
		if r.roundTrips > bound(r.took) {
			t.Errorf("%d requests over %v made %d round trips, above the bound %d", r.requests, r.took, r.roundTrips, bound(r.took))
		}
		for _, k := range r.keys {
			// The registry is written once for the jobs registered, by the
			// recruiter's timer, whatever the requests.
			if k != "flood:lock:every" && k != "flood:lock:rest" && k != "{flood:registry}:jobs" {
				t.Errorf("%d requests: key %q in Redis; want only the two jobs' lock keys and the registry's jobs", r.requests, k)
			}
		}
	}
	// Over the same time, 60,000 more requests raise the traffic by at most
	// the jobs' boundary effects. Only a rise counts: a loaded machine can
	// run the larger flood's slices later, hence fewer of them, which is no
	// traffic that requests caused (seen: 108 round trips for 20,000, 66
	// for 80,000).
	if d := large.roundTrips - small.roundTrips; d > roundTripMargin {
		t.Errorf("round trips %d (20,000 requests) vs %d (80,000): %d more, above %d",
			small.roundTrips, large.roundTrips, d, roundTripMargin)
	}
	if d := large.commands - small.commands; d > commandMargin {
		t.Errorf("Redis commands %d (20,000 requests) vs %d (80,000): %d more, above %d",
			small.commands, large.commands, d, commandMargin)
	}
	t.Logf("requests x%.0f over %v: round trips %d → %d, Redis commands %d → %d", float64(large.requests)/float64(small.requests),
		large.took.Round(time.Millisecond), small.roundTrips, large.roundTrips, small.commands, large.commands)
}
