package tasks_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
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
