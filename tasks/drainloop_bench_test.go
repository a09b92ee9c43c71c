package tasks_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// loopArgs is the peer benchmark's task: a number and a time.
type loopArgs struct {
	ID int64
	At int64
}

// BenchmarkDrainLoop is the worksteal side of the peer benchmark's
// processing rows (bench/peer_worksteal.go) on a throw-away Redis: b.N
// typed tasks enqueued first, then one loop running the Mux's job's slices
// back to back (50ms budget, DrainConfig{Concurrency: workers}), timed
// from its start to the end of the last handler. "noop" handlers return at
// once, "wait50ms" ones sleep 50ms; "noop-1-traced" is noop-1 with an
// OpenTelemetry SDK tracer provider (every span sampled, none exported)
// on the Client and the Mux. items/s is the peers' figure; redis-µs/item
// what Redis spent in scripts per task (INFO commandstats); round-trips/item
// the drain's commands and pipelines per task.
func BenchmarkDrainLoop(b *testing.B) {
	for _, v := range []struct {
		name    string
		workers int
		wait    time.Duration
		traced  bool
	}{
		{"noop-1", 1, 0, false},
		{"noop-1-traced", 1, 0, true},
		{"noop-8", 8, 0, false},
		{"wait50ms-8", 8, 50 * time.Millisecond, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			srv := redistest.Start(b)
			rdb := srv.Client(b)
			rt := &redistest.RoundTrips{}
			rdb.AddHook(rt)
			q := newQueue(b, rdb, "bench", queue.Config{})
			var opts []tasks.Option
			if v.traced {
				opts = append(opts, tasks.WithTracerProvider(sdktrace.NewTracerProvider()))
			}
			c, err := tasks.NewClient(q, opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			batch := make([]loopArgs, 0, queue.BatchMax)
			for i := range b.N {
				batch = append(batch, loopArgs{ID: int64(i)})
				if len(batch) == cap(batch) || i == b.N-1 {
					if _, err := enqueueMany(ctx, c, "loop", batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			seen := make([]atomic.Int32, b.N)
			var unique, last atomic.Int64
			mux := tasks.NewMux(opts...)
			if err := handle(mux, "loop", func(ctx context.Context, a loopArgs) (struct{}, error) {
				if v.wait > 0 {
					t := time.NewTimer(v.wait)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
				}
				if seen[a.ID].Add(1) == 1 {
					last.Store(time.Now().UnixNano())
					unique.Add(1)
				}
				return struct{}{}, nil
			}); err != nil {
				b.Fatal(err)
			}
			job, err := mux.Job(q, jobs.DrainConfig{Concurrency: v.workers})
			if err != nil {
				b.Fatal(err)
			}
			before := srv.CommandTimes(b)
			redisCPU0, goCPU0 := redisCPU(b, srv), processCPU()
			trips0 := rt.Load()
			b.ResetTimer()
			began := time.Now()
			for unique.Load() < int64(b.N) {
				sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				rep, err := job.Run(sctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					b.Fatal(err)
				}
				if rep.Items == 0 && !rep.More {
					time.Sleep(5 * time.Millisecond)
				}
			}
			b.StopTimer()
			trips := rt.Load() - trips0
			redisCPU1, goCPU1 := redisCPU(b, srv), processCPU()
			elapsed := time.Unix(0, last.Load()).Sub(began)
			usec, _ := scriptCost(before, srv.CommandTimes(b))
			if d, err := q.Depth(ctx); err != nil || d != (queue.Depth{}) {
				b.Fatalf("after the drain: %+v, %v; want every task acked", d, err)
			}
			for i := range seen {
				if n := seen[i].Load(); n != 1 {
					b.Fatalf("task %d ran %d times", i, n)
				}
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
			b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/item")
			b.ReportMetric(float64(trips)/float64(b.N), "round-trips/item")
			b.ReportMetric(float64((redisCPU1-redisCPU0).Microseconds())/float64(b.N), "redis-cpu-µs/item")
			b.ReportMetric(float64((goCPU1-goCPU0).Microseconds())/float64(b.N), "go-cpu-µs/item")
		})
	}
}

// redisCPU is the CPU time redis-server has used, per INFO cpu.
func redisCPU(b *testing.B, srv *redistest.Server) time.Duration {
	info, err := srv.Client(b).Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
