package tasks_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// BenchmarkEnqueueRedisTime enqueues b.N tasks of addArgs, one variant of
// the enqueue scripts each, and reports what Redis spent per task, read
// from INFO commandstats before and after: redis-µs/op, the time of the
// script calls (the commands they run included), and cmds/op, the
// commands the scripts ran. The raw queue's variants enqueue the very
// payload tasks.Enqueue does (the envelope of addArgs). "with" is
// EnqueueWith without options, "+unique" a key of its own per task (the
// lock is taken every time), "+delay" an hour, "+attempts" 3, "+priority"
// a priority with a weight; "many-100" is EnqueueMany of 100 at a time
// (per task). ns/op is the caller's, round trip included, one goroutine.
func BenchmarkEnqueueRedisTime(b *testing.B) {
	args := addArgs{A: 1, B: 2, Label: "a label of some size"}
	encoded, err := tasks.JSONForTest(args)
	if err != nil {
		b.Fatal(err)
	}
	payload := tasks.EncodeEnvelope("add", "json", encoded)
	batch := make([]addArgs, 100)
	for i := range batch {
		batch[i] = args
	}
	type env struct {
		q *queue.Queue
		c *tasks.Client
	}
	with := func(opts func(i int) queue.EnqueueOptions) func(ctx context.Context, e env, i int) (int, error) {
		return func(ctx context.Context, e env, i int) (int, error) {
			_, _, err := e.q.EnqueueWith(ctx, payload, opts(i))
			return 1, err
		}
	}
	for _, v := range []struct {
		name    string
		enqueue func(ctx context.Context, e env, i int) (items int, err error)
	}{
		{"queue.Enqueue", func(ctx context.Context, e env, _ int) (int, error) {
			_, err := e.q.Enqueue(ctx, payload)
			return 1, err
		}},
		{"queue.EnqueueWith", with(func(int) queue.EnqueueOptions { return queue.EnqueueOptions{} })},
		{"queue.EnqueueWith+unique", with(func(i int) queue.EnqueueOptions {
			return queue.EnqueueOptions{Unique: "u" + strconv.Itoa(i), UniqueFor: time.Hour}
		})},
		{"queue.EnqueueWith+delay", with(func(int) queue.EnqueueOptions { return queue.EnqueueOptions{Delay: time.Hour} })},
		{"queue.EnqueueWith+attempts", with(func(int) queue.EnqueueOptions { return queue.EnqueueOptions{MaxAttempts: 3} })},
		{"queue.EnqueueWith+priority", with(func(int) queue.EnqueueOptions { return queue.EnqueueOptions{Priority: "high"} })},
		{"tasks.Enqueue", func(ctx context.Context, e env, _ int) (int, error) {
			_, err := tasks.Enqueue(ctx, e.c, "add", args)
			return 1, err
		}},
		{"tasks.EnqueueMany-100", func(ctx context.Context, e env, _ int) (int, error) {
			ids, err := tasks.EnqueueMany(ctx, e.c, "add", batch)
			return len(ids), err
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			srv := redistest.Start(b)
			rdb := srv.Client(b)
			q := newQueue(b, rdb, "bench", queue.Config{})
			c, err := tasks.NewClient(q)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := q.SetPriorities(ctx, map[string]int{"high": 2, "default": 1}); err != nil {
				b.Fatal(err)
			}
			e := env{q: q, c: c}
			// The first call loads the script and makes the queue's keys.
			if _, err := v.enqueue(ctx, e, -1); err != nil {
				b.Fatal(err)
			}
			before := srv.CommandTimes(b)
			b.ResetTimer()
			done := 0
			for i := 0; done < b.N; i++ {
				n, err := v.enqueue(ctx, e, i)
				if err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.StopTimer()
			usec, cmds := scriptCost(before, srv.CommandTimes(b))
			b.ReportMetric(float64(usec)/float64(done), "redis-µs/op")
			b.ReportMetric(float64(cmds)/float64(done), "cmds/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/op")
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
