package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// BenchmarkTasksVsRawQueue drains b.N items in batches of 100, in slices
// of the recruiter's default budget (50ms): "raw" is jobs.Drain with a
// handler that returns a constant, "tasks" a Mux's job whose handler
// decodes JSON arguments and encodes a JSON result. The difference is the
// dispatch's cost per item: envelope, lookup, the codec both ways.
func BenchmarkTasksVsRawQueue(b *testing.B) {
	args, err := tasks.JSONForTest(addArgs{A: 1, B: 2, Label: "a label of some size"})
	if err != nil {
		b.Fatal(err)
	}
	payload := tasks.EncodeEnvelope("add", "json", args)
	for _, kind := range []string{"raw", "tasks"} {
		b.Run(kind+"/batch-100", func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			q := newQueue(b, rdb, "bench", queue.Config{})
			payloads := make([][]byte, b.N)
			for i := range payloads {
				payloads[i] = payload
			}
			if _, err := q.EnqueueBatch(context.Background(), payloads); err != nil {
				b.Fatal(err)
			}
			var job recruiter.Job
			cfg := jobs.DrainConfig{Batching: jobs.Batching{Batch: 100}}
			if kind == "raw" {
				result := []byte(`{"Sum":3,"Label":"a label of some size"}`)
				job, err = jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return result, nil }, cfg)
			} else {
				mux := tasks.NewMux()
				if err := tasks.Handle(mux, "add", add); err != nil {
					b.Fatal(err)
				}
				job, err = mux.Job(q, cfg)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			began, done := time.Now(), 0
			for done < b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				rep, err := job.Run(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					b.Fatalf("%s: %v", job.Name(), err)
				}
				done += rep.Items
			}
			elapsed := time.Since(began)
			b.StopTimer()
			if d, err := q.Stats(context.Background()); err != nil || d != (queue.Depth{}) {
				b.Fatalf("after the drain: %+v, %v; want every item acked", d, err)
			}
			b.ReportMetric(float64(done)/elapsed.Seconds(), "items/s")
		})
	}
}
