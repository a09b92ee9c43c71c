package main

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

type costArgs struct {
	A, B  int
	Label string
}

var costTask = tasks.Define[costArgs, struct{}]("add")

// BenchmarkEnqueueRedisTimeBesideAsynq enqueues b.N tasks from 8
// goroutines, with worksteal's tasks and asynq's client in turn, each
// variant on a throw-away redis-server of its own, and reports what Redis
// spent per task, read from INFO commandstats before and after:
// redis-µs/op, the time of the script calls (the commands they ran
// included), and cmds/op, the commands they ran. The same arguments for
// both (JSON; asynq wraps them in its protobuf message, worksteal in its
// envelope); the options alike: none, a unique key of an hour (distinct
// per task, so each takes its lock), due in an hour.
//
//	GOWORK=off go test -run '^$' -bench EnqueueRedisTimeBesideAsynq -benchtime 20000x -count 6 .
func BenchmarkEnqueueRedisTimeBesideAsynq(b *testing.B) {
	args := costArgs{A: 1, B: 2, Label: "a label of some size"}
	payload, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		ws   func(i int64) []tasks.EnqueueOption
		as   func(i int64) []asynq.Option
	}
	for _, v := range []variant{
		{"none", func(int64) []tasks.EnqueueOption { return nil }, func(int64) []asynq.Option { return nil }},
		{"unique", func(i int64) []tasks.EnqueueOption {
			return []tasks.EnqueueOption{tasks.Unique("u"+strconv.FormatInt(i, 10), time.Hour)}
		}, func(int64) []asynq.Option { return []asynq.Option{asynq.Unique(time.Hour)} }},
		{"delay", func(int64) []tasks.EnqueueOption { return []tasks.EnqueueOption{tasks.Delay(time.Hour)} },
			func(int64) []asynq.Option { return []asynq.Option{asynq.ProcessIn(time.Hour)} }},
	} {
		b.Run("worksteal/"+v.name, func(b *testing.B) {
			srv, rdb := costServer(b)
			q, err := queue.New(rdb, "bench", queue.Config{})
			if err != nil {
				b.Fatal(err)
			}
			c, err := tasks.NewClient(q)
			if err != nil {
				b.Fatal(err)
			}
			redisCost(b, srv, func(ctx context.Context, i int64) error {
				_, err := costTask.Enqueue(ctx, c, args, v.ws(i)...)
				return err
			})
		})
		b.Run("asynq/"+v.name, func(b *testing.B) {
			srv, rdb := costServer(b)
			c := asynq.NewClientFromRedisClient(rdb)
			redisCost(b, srv, func(ctx context.Context, i int64) error {
				// Unique keys hash the payload: distinct tasks, as worksteal's.
				p := append(payload[:len(payload):len(payload)], strconv.FormatInt(i, 10)...)
				_, err := c.EnqueueContext(ctx, asynq.NewTask("add", p), v.as(i)...)
				return err
			})
		})
	}
}

// costServer is a throw-away redis-server and a client of 16 connections.
func costServer(b *testing.B) (*redistest.Server, *redis.Client) {
	srv := redistest.Start(b)
	opts := srv.Options()
	opts.PoolSize = 16
	rdb := redis.NewClient(opts)
	b.Cleanup(func() { _ = rdb.Close() })
	return srv, rdb
}

// redisCost runs two warm-up enqueues (the scripts loaded), then b.N from
// 8 goroutines, and reports Redis's script µs and commands per enqueue.
func redisCost(b *testing.B, srv *redistest.Server, enqueue func(context.Context, int64) error) {
	ctx := context.Background()
	var n atomic.Int64
	n.Store(-2)
	for range 2 {
		if err := enqueue(ctx, n.Add(1)+1<<40); err != nil {
			b.Fatal(err)
		}
	}
	before := srv.CommandTimes(b)
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := enqueue(ctx, n.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	var usec, cmds int64
	for name, c := range srv.CommandTimes(b) {
		d := c.Usec - before[name].Usec
		switch name {
		case "evalsha", "eval":
			usec += d
		case "info", "hello", "client|setinfo", "sadd", "script|load":
			// the readings' own, and asynq's once-per-queue SADD
		default:
			cmds += c.Calls - before[name].Calls
		}
	}
	b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/op")
	b.ReportMetric(float64(cmds)/float64(b.N), "cmds/op")
}
