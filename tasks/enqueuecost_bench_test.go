package tasks_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// BenchmarkEnqueueRedisTime enqueues b.N tasks of addArgs, one variant of
// the enqueue scripts each, from 8 goroutines (the peers' benchmark's
// load), and reports what Redis spent per task, read from INFO
// commandstats before and after: redis-µs/op, the time of the script
// calls (the commands they ran included), and cmds/op, the commands the
// scripts ran. The raw queue's variants enqueue the very payload
// tasks.Enqueue does (the envelope of addArgs). "with" is EnqueueWith
// without options, "+unique" a key of its own per task (the lock is taken
// every time), "+delay" an hour, "+attempts" 3, "+priority" a priority
// with a weight; "many-100" is EnqueueMany of 100 tasks at a time;
// "+traced" a Client with an OpenTelemetry SDK tracer provider (every
// span sampled, none exported), whose enqueue stores a trace context. Every
// figure is per task; ns/op is wall time over all goroutines, so 1e9 over
// it is tasks per second.
func BenchmarkEnqueueRedisTime(b *testing.B) {
	args := addArgs{A: 1, B: 2, Label: "a label of some size"}
	encoded, err := tasks.JSONForTest(args)
	if err != nil {
		b.Fatal(err)
	}
	payload := tasks.EncodeEnvelope("add", "json", encoded)
	type env struct {
		q *queue.Queue
		c *tasks.Client
	}
	with := func(opts func(i int64) queue.EnqueueOptions) func(ctx context.Context, e env, i int64, n int) error {
		return func(ctx context.Context, e env, i int64, _ int) error {
			_, _, err := e.q.EnqueueWith(ctx, payload, opts(i))
			return err
		}
	}
	enqueueTask := func(ctx context.Context, e env, _ int64, _ int) error {
		_, err := enqueue(ctx, e.c, "add", args)
		return err
	}
	for _, v := range []struct {
		name  string
		batch int // tasks per call
		// enqueue makes one call of n tasks; i is unique to the call.
		enqueue func(ctx context.Context, e env, i int64, n int) error
	}{
		{"queue.Enqueue", 1, func(ctx context.Context, e env, _ int64, _ int) error {
			_, err := e.q.Enqueue(ctx, payload)
			return err
		}},
		{"queue.EnqueueWith", 1, with(func(int64) queue.EnqueueOptions { return queue.EnqueueOptions{} })},
		{"queue.EnqueueWith+unique", 1, with(func(i int64) queue.EnqueueOptions {
			return queue.EnqueueOptions{Unique: "u" + strconv.FormatInt(i, 10), UniqueFor: time.Hour}
		})},
		{"queue.EnqueueWith+delay", 1, with(func(int64) queue.EnqueueOptions { return queue.EnqueueOptions{Delay: time.Hour} })},
		{"queue.EnqueueWith+attempts", 1, with(func(int64) queue.EnqueueOptions { return queue.EnqueueOptions{MaxAttempts: 3} })},
		{"queue.EnqueueWith+priority", 1, with(func(int64) queue.EnqueueOptions { return queue.EnqueueOptions{Priority: "high"} })},
		{"tasks.Enqueue", 1, enqueueTask},
		{"tasks.Enqueue+traced", 1, enqueueTask},
		{"tasks.EnqueueMany-100", 100, func(ctx context.Context, e env, _ int64, n int) error {
			batch := make([]addArgs, n)
			for i := range batch {
				batch[i] = args
			}
			_, err := enqueueMany(ctx, e.c, "add", batch)
			return err
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			srv := redistest.Start(b)
			opts := srv.Options()
			opts.PoolSize = 16
			rdb := redis.NewClient(opts)
			b.Cleanup(func() { _ = rdb.Close() })
			q := newQueue(b, rdb, "bench", queue.Config{})
			var tracing []tasks.Option
			if strings.HasSuffix(v.name, "+traced") {
				tracing = append(tracing, tasks.WithTracerProvider(sdktrace.NewTracerProvider()))
			}
			c, err := tasks.NewClient(q, tracing...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := q.SetPriorities(ctx, map[string]int{"high": 2, "default": 1}); err != nil {
				b.Fatal(err)
			}
			e := env{q: q, c: c}
			// The first call loads the script and makes the queue's keys.
			if err := v.enqueue(ctx, e, -1, 1); err != nil {
				b.Fatal(err)
			}
			var calls atomic.Int64
			before := srv.CommandTimes(b)
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				n := 0 // tasks waiting for the next call
				for more := pb.Next(); more || n > 0; more = more && pb.Next() {
					if more {
						n++
					}
					if more && n < v.batch {
						continue
					}
					if err := v.enqueue(ctx, e, calls.Add(1), n); err != nil {
						b.Error(err)
						return
					}
					n = 0
				}
			})
			b.StopTimer()
			usec, cmds := scriptCost(before, srv.CommandTimes(b))
			b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(cmds)/float64(b.N), "cmds/op")
		})
	}
}

// scriptCost is what Redis spent on scripts between two readings of INFO
// commandstats: their µs, and the commands they ran (every command but
// the scripts themselves and the readings).
func scriptCost(before, after map[string]redistest.CommandTime) (usec, cmds int64) {
	for name, a := range after {
		d := a.Calls - before[name].Calls
		switch name {
		case "evalsha", "eval":
			usec += a.Usec - before[name].Usec
		case "info", "script|load", "hello", "client|setinfo", "ping":
		default:
			cmds += d
		}
	}
	return usec, cmds
}
