// Command previousmux is the previous release's side of test/rolling: the
// test copies it into that release's tree (git archive b3b2630) and builds
// it there, so it uses that release's public API only. It enqueues a mix
// of tasks, or runs a recruiter holding the queue's tasks.Mux until the
// queue is idle or empty, writing each enqueue and handler run to a log as
// whole lines (one write each).
//
// Its handlers are those of rolling_test.go, which this release runs: keep
// the two in step.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// spec is what the process does (the test's previousSpec, as JSON in
// argv[1]).
type spec struct {
	Do                  string // "enqueue" or "run"
	Addr, Prefix, Queue string
	Log                 string
	Runs                string // the key prefix of the runs' counts
	Until               string // run: "idle" (nothing pending or leased) or "empty" (nothing delayed either)
	Lease, Hold, GiveUp time.Duration
	Pace                time.Duration // how long each run takes
	MaxAttempts         int
	Tasks               []mix
}

// mix is one enqueue: a task, a chain of 3 or a fan-out of 3 and a final.
type mix struct {
	Kind             string // "plain", "chain" or "fanout"
	K                string
	Mode             string // its first run (a chain's step 2, a fan-out's child 2) fails
	Priority, Unique string
	Delay            time.Duration
}

type args struct {
	K, Mode string
	Add     int
}

var (
	plain = tasks.Define[args, string]("roll.plain")
	add   = tasks.Define[args, int]("roll.add")
	sum   = tasks.Define[args, int]("roll.sum")
)

func main() {
	var s spec
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: previousmux SPEC-JSON")
		os.Exit(2)
	}
	if err := json.Unmarshal([]byte(os.Args[1]), &s); err != nil {
		fmt.Fprintln(os.Stderr, "spec:", err)
		os.Exit(2)
	}
	if err := do(s); err != nil {
		fmt.Fprintln(os.Stderr, "previousmux:", err)
		os.Exit(1)
	}
}

func do(s spec) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
	defer rdb.Close()
	q, err := queue.New(rdb, s.Queue, queue.Config{Prefix: s.Prefix, Lease: s.Lease, MaxAttempts: s.MaxAttempts,
		BackoffBase: s.Hold, BackoffMax: s.Hold})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	line := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(f, fmt.Sprintf(format, a...))
	}
	ctx := context.Background()
	switch s.Do {
	case "enqueue":
		return enqueue(ctx, q, s.Tasks, line)
	case "run":
		return run(ctx, rdb, q, s, line)
	}
	return fmt.Errorf("unknown Do %q", s.Do)
}

func enqueue(ctx context.Context, q *queue.Queue, mixes []mix, line func(string, ...any)) error {
	c, err := tasks.NewClient(q)
	if err != nil {
		return err
	}
	for _, m := range mixes {
		var opts []tasks.EnqueueOption
		if m.Priority != "" {
			opts = append(opts, tasks.Priority(m.Priority))
		}
		if m.Unique != "" {
			opts = append(opts, tasks.Unique(m.Unique, time.Minute))
		}
		if m.Delay > 0 {
			opts = append(opts, tasks.Delay(m.Delay))
		}
		var id string
		switch m.Kind {
		case "plain":
			id, err = plain.Enqueue(ctx, c, args{K: m.K, Mode: m.Mode}, opts...)
		case "chain":
			id, err = tasks.EnqueueChain(ctx, c, []tasks.Step{
				add.Step(args{K: m.K + ".1", Add: 1}),
				add.Step(args{K: m.K + ".2", Mode: m.Mode, Add: 10}),
				add.Step(args{K: m.K + ".3", Add: 100}),
			}, opts...)
		case "fanout":
			id, err = tasks.EnqueueFanOut(ctx, c, []tasks.Step{
				add.Step(args{K: m.K + ".1", Add: 1}),
				add.Step(args{K: m.K + ".2", Mode: m.Mode, Add: 2}),
				add.Step(args{K: m.K + ".3", Add: 3}),
			}, sum.Step(args{K: m.K + ".f", Add: 1000}), opts...)
		default:
			err = fmt.Errorf("unknown kind %q", m.Kind)
		}
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", m.K, err)
		}
		line("E %s %s\n", m.K, id)
	}
	return nil
}

// errFirstRun is how this release's handlers fail a task's first run,
// whatever its mode: it knows no snoozes nor retries after a delay.
var errFirstRun = errors.New("its first run fails")

func run(ctx context.Context, rdb *redis.Client, q *queue.Queue, s spec, line func(string, ...any)) error {
	// ran counts the task's runs, in every release (the key is the test's,
	// outside the prefix), and logs this one: the first run of a task with
	// a mode fails.
	ran := func(ctx context.Context, typ string, a args) error {
		n, err := rdb.Incr(ctx, s.Runs+a.K).Result()
		if err != nil {
			return err
		}
		line("R previous %s %s %d 0 %d\n", typ, a.K, n, time.Now().UnixMilli())
		time.Sleep(s.Pace)
		if n == 1 && a.Mode != "" {
			return fmt.Errorf("%s (%s): %w", a.K, a.Mode, errFirstRun)
		}
		return nil
	}
	mux := tasks.NewMux()
	if err := plain.Handle(mux, func(ctx context.Context, a args) (string, error) {
		if err := ran(ctx, plain.Type(), a); err != nil {
			return "", err
		}
		return "done:" + a.K, nil
	}); err != nil {
		return err
	}
	if err := add.Handle(mux, func(ctx context.Context, a args) (int, error) {
		if err := ran(ctx, add.Type(), a); err != nil {
			return 0, err
		}
		prev, _, err := tasks.PreviousResult[int](ctx)
		return prev + a.Add, err
	}); err != nil {
		return err
	}
	if err := sum.Handle(mux, func(ctx context.Context, a args) (int, error) {
		if err := ran(ctx, sum.Type(), a); err != nil {
			return 0, err
		}
		rs, ok, err := tasks.ChildResults[int](ctx)
		if err != nil || !ok {
			return 0, fmt.Errorf("%s: child results (%v): %w", a.K, ok, err)
		}
		total := a.Add
		for _, r := range rs {
			total += r
		}
		return total, nil
	}); err != nil {
		return err
	}
	rec, err := recruiter.New(rdb, recruiter.Config{Prefix: s.Prefix, Inline: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	// rolling_test.go's batching.
	job, err := mux.Job(q, jobs.DrainConfig{Batching: jobs.Batching{Batch: 8, RedisTimeout: 2 * time.Second}})
	if err != nil {
		return err
	}
	promote, err := jobs.PromoteDue(q, jobs.PromoteConfig{})
	if err != nil {
		return err
	}
	if err := rec.Register(job, recruiter.JobConfig{Rate: 0.8, Budget: 200 * time.Millisecond}); err != nil {
		return err
	}
	if err := rec.Register(promote, recruiter.JobConfig{Rate: 0.2, Budget: 50 * time.Millisecond}); err != nil {
		return err
	}
	giveUp := time.Now().Add(s.GiveUp)
	for i := 0; ; i++ {
		rec.Enlist(ctx) // a request that exited fast
		if i%10 == 0 {
			d, err := q.Depth(ctx)
			if err == nil && d.Pending+d.Leased == 0 && (s.Until == "idle" || d.Delayed == 0) {
				break
			}
			if time.Now().After(giveUp) {
				return fmt.Errorf("queue not %s after %v: %+v", s.Until, s.GiveUp, d)
			}
		}
		time.Sleep(500 * time.Microsecond) // the next request
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rec.Shutdown(sctx); err != nil {
		return err
	}
	line("X\n")
	return nil
}
