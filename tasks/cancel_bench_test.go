package tasks_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// BenchmarkCancelRunning: from the call of Cancel, on one client, to the
// end of the running handler's context, on a worker with a client of its
// own (as another process would be), one task at a time; p50, p99 and the
// longest over 100 cancels. at-start cancels as soon as the handler
// starts (the batch's first poll is 100ms later: near the worst case);
// mid-run at a spread of moments 0-300ms into the run, as a user would.
//
//	GOWORK=off go test -run '^$' -bench CancelRunning -benchtime 1x ./tasks
func BenchmarkCancelRunning(b *testing.B) {
	srv := redistest.Start(b)
	cfg := queue.Config{Prefix: redistest.Prefix(b), Lease: time.Minute}
	worker, err := queue.New(srv.Client(b), "tasks", cfg)
	if err != nil {
		b.Fatal(err)
	}
	mux := tasks.NewMux()
	started := make(chan struct{}, 1)
	ended := make(chan time.Time, 1)
	block := tasks.Define[int, int]("block")
	if err := block.Handle(mux, func(ctx context.Context, _ int) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		at := time.Now()
		if !errors.Is(context.Cause(ctx), queue.ErrCanceled) {
			b.Errorf("cause %v, want queue.ErrCanceled", context.Cause(ctx))
		}
		ended <- at
		return 0, ctx.Err()
	}); err != nil {
		b.Fatal(err)
	}
	job, err := mux.Job(worker, jobs.DrainConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() {
		for ctx.Err() == nil {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = job.Run(sctx)
			cancel()
		}
	})
	q, err := queue.New(srv.Client(b), "tasks", cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := tasks.NewClient(q)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"at-start", "mid-run"} {
		b.Run(mode, func(b *testing.B) {
			lags, calls := cancelLags(b, ctx, c, block, started, ended, mode == "mid-run")
			p := func(ds []time.Duration, q float64) float64 {
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(p(lags, 0.5), "p50-ms")
			b.ReportMetric(p(lags, 0.99), "p99-ms")
			b.ReportMetric(p(lags, 1), "max-ms")
			b.ReportMetric(p(calls, 0.5), "cancel-call-p50-ms")
		})
	}
}

func cancelLags(b *testing.B, ctx context.Context, c *tasks.Client, block tasks.Task[int, int], started chan struct{}, ended chan time.Time, spread bool) (lags, calls []time.Duration) {
	for b.Loop() {
		lags, calls = lags[:0], calls[:0]
		for i := range 100 {
			id, err := block.Enqueue(ctx, c, i)
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				b.Fatalf("task %d did not start in 10s", i)
			}
			if spread {
				time.Sleep(time.Duration(i*37%300) * time.Millisecond) // the moment of the cancel, not an assertion
			}
			began := time.Now()
			if err := tasks.Cancel(ctx, c, id); err != nil {
				b.Fatal(err)
			}
			calls = append(calls, time.Since(began))
			select {
			case at := <-ended:
				lags = append(lags, at.Sub(began))
			case <-time.After(10 * time.Second):
				b.Fatalf("task %d's handler did not see its cancel in 10s", i)
			}
		}
	}
	return lags, calls
}
