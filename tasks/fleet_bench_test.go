package tasks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// fleetProcess is one process of a fleet wired as the README shows: its
// own client, queue, Mux, job (defaults) and recruiter (defaults but for
// the pressure gate, which would read this benchmark's own scheduler),
// with fast exits at a given rate.
type fleetProcess struct {
	rec *recruiter.Recruiter
	c   *tasks.Client
}

func startFleet(b *testing.B, srv *redistest.Server, n, fastExits int, every time.Duration, register func(*tasks.Mux)) []fleetProcess {
	b.Helper()
	prefix := redistest.Prefix(b)
	procs := make([]fleetProcess, n)
	for i := range procs {
		rdb := srv.Client(b)
		q, err := queue.New(rdb, "fleet", queue.Config{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		mux := tasks.NewMux()
		register(mux)
		job, err := mux.Job(q, jobs.DrainConfig{})
		if err != nil {
			b.Fatal(err)
		}
		rec, err := recruiter.New(rdb, recruiter.Config{Pressure: -1, Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			b.Fatal(err)
		}
		c, err := tasks.NewClient(q)
		if err != nil {
			b.Fatal(err)
		}
		procs[i] = fleetProcess{rec: rec, c: c}
		enlistAt(b, rec, fastExits)
	}
	b.Cleanup(func() {
		for _, p := range procs {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = p.rec.Shutdown(ctx)
			cancel()
		}
	})
	return procs
}

// enlistAt enlists rec perSecond times a second, as fast exits whose
// responses are sent, until the benchmark ends.
func enlistAt(b *testing.B, rec *recruiter.Recruiter, perSecond int) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				rec.Enlist(done)
			}
		}
	})
	b.Cleanup(func() { close(quit); wg.Wait() })
}

// BenchmarkFleetWaitingTasks: tasks whose handler waits 50ms (an
// upstream), 3 processes at 200 fast exits/s each, Every 1s, defaults
// otherwise: the fleet's tasks per second, each task counted once.
//
//	GOWORK=off go test -run '^$' -bench FleetWaitingTasks -benchtime 1x ./tasks
func BenchmarkFleetWaitingTasks(b *testing.B) {
	const procs, fastExits, total = 3, 200, 3000
	srv := redistest.Start(b)
	var ran sync.Map
	var dup atomic.Int64
	var left atomic.Int64
	left.Store(total)
	done := make(chan struct{})
	wait := tasks.Define[int, struct{}]("wait")
	fleet := startFleet(b, srv, procs, fastExits, time.Second, func(m *tasks.Mux) {
		if err := wait.Handle(m, func(ctx context.Context, n int) (struct{}, error) {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return struct{}{}, ctx.Err()
			}
			if _, again := ran.LoadOrStore(n, true); again {
				dup.Add(1)
			} else if left.Add(-1) == 0 {
				close(done)
			}
			return struct{}{}, nil
		}); err != nil {
			b.Fatal(err)
		}
	})
	args := make([]int, total)
	for i := range args {
		args[i] = i
	}
	time.Sleep(2 * time.Second) // the fleet learns its size
	b.ResetTimer()
	began := time.Now()
	if _, err := wait.EnqueueMany(context.Background(), fleet[0].c, args); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d tasks left after 5 minutes", left.Load(), total)
	}
	took := time.Since(began)
	b.ReportMetric(float64(total)/took.Seconds(), "tasks/s")
	b.ReportMetric(float64(dup.Load()), "dups")
}

// BenchmarkEnqueueToStart: enqueue → handler start, one task at a time
// at 10 a second from one process of 3, each at fastExits fast exits/s,
// Every 1s; p50 and p99 over 200 tasks.
//
//	GOWORK=off go test -run '^$' -bench EnqueueToStart -benchtime 1x ./tasks
func BenchmarkEnqueueToStart(b *testing.B) {
	for _, fastExits := range []int{100, 1000} {
		if testing.Short() && fastExits > 100 {
			continue
		}
		b.Run(fmt.Sprintf("fast-exits-%d", fastExits), func(b *testing.B) {
			srv := redistest.Start(b)
			started := make(chan time.Time, 1)
			ping := tasks.Define[int, int]("ping")
			step := tasks.Define[int, int]("step")
			fleet := startFleet(b, srv, 3, fastExits, time.Second, func(m *tasks.Mux) {
				_ = ping.Handle(m, func(context.Context, int) (int, error) {
					select {
					case started <- time.Now():
					default:
					}
					return 0, nil
				})
				_ = step.Handle(m, func(_ context.Context, n int) (int, error) { return n + 1, nil })
			})
			time.Sleep(2 * time.Second)
			ctx := context.Background()
			var waits, chains []time.Duration
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < 200; i++ {
				<-tick.C
				enq := time.Now()
				if _, err := ping.Enqueue(ctx, fleet[i%3].c, i); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-started:
					waits = append(waits, at.Sub(enq))
				case <-time.After(10 * time.Second):
					b.Fatalf("task %d did not start in 10s", i)
				}
				if i%4 == 0 {
					<-tick.C
					began := time.Now()
					if _, err := tasks.CallChain[int](ctx, fleet[i%3].c, []tasks.Step{step.Step(0), step.Pipe(), step.Pipe()}); err != nil {
						b.Fatal(err)
					}
					chains = append(chains, time.Since(began))
				}
			}
			p := func(ds []time.Duration, q float64) float64 {
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(p(waits, 0.5), "p50-ms")
			b.ReportMetric(p(waits, 0.9), "p90-ms")
			b.ReportMetric(p(waits, 0.99), "p99-ms")
			b.ReportMetric(p(chains, 0.5), "chain3-p50-ms")
		})
	}
}

// BenchmarkFastExitsBesideWaitingTasks: the cost to requests of tasks
// that wait 50 ms. Three HTTP services on loopback, each answering 204
// (a fast exit) to 200 requests a second; "jobs" wires each as the README
// shows (stealhttp, a recruiter, a Mux's job) with a backlog of waiting
// tasks kept up all along, "none" is the same services without the
// middleware. Rounds alternate; the p99 of the requests' latency, seen by
// the client, is reported for each, and their ratio.
//
//	GOWORK=off go test -run '^$' -bench FastExitsBesideWaitingTasks -benchtime 1x ./tasks
func BenchmarkFastExitsBesideWaitingTasks(b *testing.B) {
	const procs, perSecond, rounds, round = 3, 200, 3, 8 * time.Second
	srv := redistest.Start(b)
	wait := tasks.Define[int, struct{}]("wait")
	var handled atomic.Int64
	var p99s [2][]float64
	for r := 0; r < 2*rounds; r++ {
		withJobs := r%2 == 0
		var urls []string
		var recs []*recruiter.Recruiter
		var clients []*tasks.Client
		prefix := fmt.Sprintf("%s-%d", redistest.Prefix(b), r)
		for range procs {
			h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			if withJobs {
				rdb := srv.Client(b)
				q, err := queue.New(rdb, "fleet", queue.Config{Prefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				mux := tasks.NewMux()
				_ = wait.Handle(mux, func(ctx context.Context, _ int) (struct{}, error) {
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
						return struct{}{}, ctx.Err()
					}
					handled.Add(1)
					return struct{}{}, nil
				})
				job, err := mux.Job(q, jobs.DrainConfig{})
				if err != nil {
					b.Fatal(err)
				}
				rec, err := recruiter.New(rdb, recruiter.Config{Prefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				if err := rec.Register(job, recruiter.JobConfig{Every: time.Second}); err != nil {
					b.Fatal(err)
				}
				c, err := tasks.NewClient(q)
				if err != nil {
					b.Fatal(err)
				}
				recs, clients = append(recs, rec), append(clients, c)
				h = stealhttp.Middleware(rec)(h)
			}
			ts := httptest.NewServer(h)
			urls = append(urls, ts.URL)
			defer ts.Close()
		}
		stop := make(chan struct{})
		var feeding sync.WaitGroup
		if withJobs {
			feeding.Go(func() { // a backlog all along: 400 tasks a second
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				args := make([]int, 40)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
						_, _ = wait.EnqueueMany(context.Background(), clients[i%procs], args)
					}
				}
			})
		}
		lat := loadAt(b, urls, perSecond, round)
		close(stop)
		feeding.Wait()
		for _, rec := range recs {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = rec.Shutdown(ctx)
			cancel()
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p99 := float64(lat[len(lat)*99/100].Microseconds()) / 1000
		p99s[r%2] = append(p99s[r%2], p99)
		b.Logf("round %d, jobs %v: %d requests, p50 %v, p99 %.2f ms", r, withJobs, len(lat), lat[len(lat)/2], p99)
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(p99s[0]), "p99-jobs-ms")
	b.ReportMetric(med(p99s[1]), "p99-none-ms")
	b.ReportMetric(med(p99s[0])/med(p99s[1]), "ratio")
	b.ReportMetric(float64(handled.Load())/float64(rounds)/round.Seconds(), "tasks/s")
}

// loadAt sends perSecond requests a second to each url for d, each on a
// goroutine of its own (an open loop), and returns their latencies.
func loadAt(b *testing.B, urls []string, perSecond int, d time.Duration) []time.Duration {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(perSecond*len(urls)))
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		url := urls[i%len(urls)]
		wg.Go(func() {
			began := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took := time.Since(began)
			mu.Lock()
			lat = append(lat, took)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat
}
