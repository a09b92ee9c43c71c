package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// BenchmarkTasksVsRawQueue drains b.N items in batches of 100, in slices
// of the recruiter's default budget (50ms). "raw" is jobs.Drain of the
// arguments' JSON with a handler that returns a constant; "raw-json" the
// same, its handler decoding the arguments and encoding the result by hand,
// as a raw queue's user would; "tasks" a Mux's job running the typed
// handler; "tasks-bytes" a Mux with a codec that passes bytes through and
// a handler that returns raw's constant. tasks against raw is the whole
// cost per item of typed tasks (envelope, lookup, counts, the codec both
// ways); tasks-bytes against raw, and tasks against raw-json, the
// dispatch's alone.
func BenchmarkTasksVsRawQueue(b *testing.B) {
	args, err := tasks.JSONForTest(addArgs{A: 1, B: 2, Label: "a label of some size"})
	if err != nil {
		b.Fatal(err)
	}
	payload := tasks.EncodeEnvelope("add", "json", args)
	bytesPayload := tasks.EncodeEnvelope("add", bytesCodec{}.Name(), args)
	result := []byte(`{"Sum":3,"Label":"a label of some size"}`)
	for _, kind := range []string{"raw", "raw-json", "tasks", "tasks-bytes"} {
		b.Run(kind+"/batch-100", func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			q := newQueue(b, rdb, "bench", queue.Config{})
			payloads := make([][]byte, b.N)
			for i := range payloads {
				payloads[i] = args
				switch kind {
				case "tasks":
					payloads[i] = payload
				case "tasks-bytes":
					payloads[i] = bytesPayload
				}
			}
			if _, err := q.EnqueueBatch(context.Background(), payloads); err != nil {
				b.Fatal(err)
			}
			var job recruiter.Job
			cfg := jobs.DrainConfig{Batching: jobs.Batching{Batch: 100}}
			switch kind {
			case "raw-json":
				job, err = jobs.Drain(q, func(ctx context.Context, it queue.Item) ([]byte, error) {
					var a addArgs
					if err := json.Unmarshal(it.Payload, &a); err != nil {
						return nil, err
					}
					r, err := add(ctx, a)
					if err != nil {
						return nil, err
					}
					return json.Marshal(r)
				}, cfg)
			case "raw":
				job, err = jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return result, nil }, cfg)
			case "tasks-bytes":
				mux := tasks.NewMux(tasks.WithCodec(bytesCodec{}))
				if err := handle(mux, "add", func(context.Context, []byte) ([]byte, error) { return result, nil }); err != nil {
					b.Fatal(err)
				}
				job, err = mux.Job(q, cfg)
			default:
				mux := tasks.NewMux()
				if err := handle(mux, "add", add); err != nil {
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
			if d, err := q.Depth(context.Background()); err != nil || d != (queue.Depth{}) {
				b.Fatalf("after the drain: %+v, %v; want every item acked", d, err)
			}
			b.ReportMetric(float64(done)/elapsed.Seconds(), "items/s")
		})
	}
}

// bytesCodec passes []byte through: a codec that costs nothing.
type bytesCodec struct{}

func (bytesCodec) Name() string { return "bytes" }

func (bytesCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return nil, fmt.Errorf("bytes codec: %T is not []byte", v)
}

func (bytesCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bytes codec: %T is not *[]byte", v)
	}
	*p = data
	return nil
}

// BenchmarkEnqueueMany enqueues b.N tasks of addArgs: "enqueue" one
// Enqueue each, "many-K" EnqueueMany of K tasks at a time, "many-1000+opts"
// the same with Delay and Attempts. ns/op and roundtrips/op are per task.
// Each variant has its own throw-away redis-server, and the first call
// (which dials and loads the script) is made before the timer starts.
func BenchmarkEnqueueMany(b *testing.B) {
	args := addArgs{A: 1, B: 2, Label: "a label of some size"}
	for _, v := range []struct {
		name string
		k    int // 0: Enqueue
		opts []tasks.EnqueueOption
	}{
		{"enqueue", 0, nil},
		{"many-10", 10, nil},
		{"many-100", 100, nil},
		{"many-1000", 1000, nil},
		{"many-1000+opts", 1000, []tasks.EnqueueOption{tasks.Delay(time.Hour), tasks.Attempts(3)}},
	} {
		b.Run(v.name, func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			rt := &redistest.RoundTrips{}
			rdb.AddHook(rt)
			c, err := tasks.NewClient(newQueue(b, rdb, "bench", queue.Config{}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			batch := make([]addArgs, max(v.k, 1))
			for i := range batch {
				batch[i] = args
			}
			if _, err := enqueueMany(ctx, c, "add", batch[:1], v.opts...); err != nil {
				b.Fatal(err)
			}
			if _, err := enqueue(ctx, c, "add", args, v.opts...); err != nil {
				b.Fatal(err)
			}
			before := rt.Load()
			b.ResetTimer()
			for done := 0; done < b.N; {
				if v.k == 0 {
					if _, err := enqueue(ctx, c, "add", args, v.opts...); err != nil {
						b.Fatal(err)
					}
					done++
					continue
				}
				n := min(v.k, b.N-done)
				if _, err := enqueueMany(ctx, c, "add", batch[:n], v.opts...); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(rt.Load()-before)/float64(b.N), "roundtrips/op")
		})
	}
}

// BenchmarkClaimLimits drains b.N tasks (Claim of 100, one Settle) of
// type "add" as limits change what a claim does: "none", no limit on the
// queue (the plain claim); "other-type", a limit on another type only
// (the typed claim, which reads each item's type); "running", "add"
// limited to a number of tasks at once that it never reaches (each claim
// counts and records its places, each settle frees them); "running+rate",
// that and a rate it never reaches (each claim also records its starts);
// "half-set-aside", every other task of a type at its limit (Running 1,
// held by a task never settled), so each claim sets aside as many as it
// leases; b.N counts the leased ones; "priorities", no limit but three
// priorities weighted 6:3:1, all backlogged (the claim draws each lease
// from a lane). Commands are Redis's, inside the scripts too (INFO
// commandstats), per item drained.
func BenchmarkClaimLimits(b *testing.B) {
	ctx := context.Background()
	payload := tasks.EncodeEnvelope("add", "json", []byte(`{"A":1,"B":2}`))
	held := tasks.EncodeEnvelope("held", "json", []byte(`{}`))
	for _, kind := range []string{"none", "other-type", "running", "running+rate", "half-set-aside", "priorities"} {
		b.Run(kind, func(b *testing.B) {
			srv := redistest.Start(b)
			rdb := srv.Client(b)
			rt := &redistest.RoundTrips{}
			rdb.AddHook(rt)
			q := newQueue(b, rdb, "bench", queue.Config{})
			c, err := tasks.NewClient(q)
			if err != nil {
				b.Fatal(err)
			}
			limits := map[string]map[string]tasks.Limit{
				"other-type":     {"other": {Running: 1}},
				"running":        {"add": {Running: 100_000}},
				"running+rate":   {"add": {Running: 100_000, Rate: 100_000, Per: time.Hour}},
				"half-set-aside": {"held": {Running: 1}},
			}[kind]
			for typ, l := range limits {
				if err := tasks.Raw(typ).SetLimit(ctx, c, l); err != nil {
					b.Fatal(err)
				}
			}
			payloads := make([][]byte, 0, 2*b.N+1)
			if kind == "half-set-aside" {
				payloads = append(payloads, held) // claimed first, never settled
			}
			for range b.N {
				payloads = append(payloads, payload)
				if kind == "half-set-aside" {
					payloads = append(payloads, held)
				}
			}
			if kind == "priorities" {
				if err := q.SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1}); err != nil {
					b.Fatal(err)
				}
				args := make([]json.RawMessage, b.N)
				for i := range args {
					args[i] = json.RawMessage(`{"A":1,"B":2}`)
				}
				for _, p := range []string{"critical", "default", "low"} {
					if _, err := enqueueMany(ctx, c, "add", args, tasks.Priority(p)); err != nil {
						b.Fatal(err)
					}
				}
				payloads = nil
			}
			for start := 0; start < len(payloads); start += queue.BatchMax {
				if _, err := q.EnqueueBatch(ctx, payloads[start:min(start+queue.BatchMax, len(payloads))]); err != nil {
					b.Fatal(err)
				}
			}
			if kind == "half-set-aside" {
				if items, err := q.Claim(ctx, 1); err != nil || len(items) != 1 {
					b.Fatalf("Claim of the holder: %d, %v", len(items), err)
				}
			}
			before := srv.CommandStats(b)
			rt.Store(0)
			b.ResetTimer()
			outcomes := make([]queue.Settlement, 0, 100)
			for done := 0; done < b.N; {
				items, err := q.Claim(ctx, min(100, b.N-done))
				if err != nil {
					b.Fatal(err)
				}
				if len(items) == 0 {
					continue // a claim that set aside its whole look
				}
				outcomes = outcomes[:0]
				for _, it := range items {
					outcomes = append(outcomes, queue.Settlement{Item: it, Result: []byte("3")})
				}
				if s, err := q.Settle(ctx, outcomes...); err != nil || s.Acked != len(items) {
					b.Fatalf("Settle = %+v, %v", s, err)
				}
				done += len(items)
			}
			b.StopTimer()
			var commands int64
			for cmd, n := range srv.CommandStats(b) {
				if cmd != "info" && cmd != "hello" && cmd != "client|setinfo" {
					commands += n - before[cmd]
				}
			}
			b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/item")
			b.ReportMetric(float64(commands)/float64(b.N), "commands/item")
		})
	}
}
