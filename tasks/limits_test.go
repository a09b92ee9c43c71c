package tasks_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

var (
	slowTask  = tasks.Define[int, int]("slow")
	quickTask = tasks.Define[int, int]("quick")
	apiTask   = tasks.Define[int, int]("api")
)

// fleetOf returns three clients, the connections of three processes, to
// one Redis, or to one 3-master cluster.
func fleetOf(t *testing.T, cluster bool) [3]redis.UniversalClient {
	var fleet [3]redis.UniversalClient
	if cluster {
		c := redistest.StartCluster(t)
		for i := range fleet {
			fleet[i] = c.Client(t)
		}
		return fleet
	}
	srv := redistest.Start(t)
	for i := range fleet {
		fleet[i] = srv.Client(t)
	}
	return fleet
}

// Three processes, each with its own Mux and two drain loops, work one
// queue where "slow" is limited to 2 at once: sampled from inside the
// handlers, never 3 run at once, and the unlimited "quick" tasks enqueued
// among them are all done while many slow ones still wait.
func TestLimitRunningFleetWide(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		name := map[bool]string{false: "standalone", true: "cluster"}[cluster]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const perType = 24
			fleet := fleetOf(t, cluster)
			prefix := redistest.Prefix(t)
			ctx := testrig.Context(t, 60*time.Second)
			var running, most, slowDone, quickDone, slowLeftAtLastQuick atomic.Int64
			var q0 *queue.Queue
			var jobsOf []func(context.Context) error
			for i, rdb := range fleet {
				q := newQueue(t, rdb, "tasks", queue.Config{Prefix: prefix})
				if i == 0 {
					q0 = q
				}
				mux := tasks.NewMux()
				if err := slowTask.Handle(mux, func(ctx context.Context, n int) (int, error) {
					now := running.Add(1)
					defer running.Add(-1)
					for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
					}
					time.Sleep(30 * time.Millisecond) // holds its place, as a slow upstream would
					slowDone.Add(1)
					return n, nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := quickTask.Handle(mux, func(ctx context.Context, n int) (int, error) {
					if quickDone.Add(1) == perType {
						slowLeftAtLastQuick.Store(perType - slowDone.Load())
					}
					return n, nil
				}); err != nil {
					t.Fatal(err)
				}
				// A task a claim: each loop holds at most one slow task, so
				// six loops could run six at once.
				job, err := mux.Job(q, jobs.DrainConfig{Batching: jobs.Batching{Batch: 1}})
				if err != nil {
					t.Fatal(err)
				}
				run := func(ctx context.Context) error { _, err := job.Run(ctx); return err }
				jobsOf = append(jobsOf, run, run)
			}
			c, err := tasks.NewClient(q0)
			if err != nil {
				t.Fatal(err)
			}
			if err := slowTask.SetLimit(ctx, c, tasks.Limit{Running: 2}); err != nil {
				t.Fatal(err)
			}
			for i := range perType {
				if _, err := slowTask.Enqueue(ctx, c, i); err != nil {
					t.Fatal(err)
				}
				if _, err := quickTask.Enqueue(ctx, c, i); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for _, run := range jobsOf {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						sctx, cancel := context.WithTimeout(ctx, time.Second)
						err := run(sctx)
						cancel()
						if err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
							t.Errorf("Run: %v", err)
							return
						}
						if err == nil && slowDone.Load() < perType {
							time.Sleep(2 * time.Millisecond) // a quiet poll, not a busy loop
						}
					}
				})
			}
			testrig.Eventually(t, 50*time.Second, "every task done", func() bool {
				d, err := q0.Depth(ctx)
				return err == nil && d == queue.Depth{}
			})
			close(stop)
			wg.Wait()
			if got := most.Load(); got != 2 {
				t.Fatalf("at most %d slow tasks ran at once, want the limit, 2", got)
			}
			if got := slowDone.Load(); got != perType {
				t.Fatalf("%d slow tasks done, want %d", got, perType)
			}
			// 24 slow tasks, 2 at a time, take 12 rounds of 30ms: the quick
			// ones, among them in the queue, were not held back behind them.
			if left := slowLeftAtLastQuick.Load(); left < 6 {
				t.Fatalf("when the last quick task was done, %d slow tasks were left, want at least 6", left)
			}
			t.Logf("at most %d slow tasks at once; %d slow tasks left when the quick ones were done", most.Load(), slowLeftAtLastQuick.Load())
		})
	}
}

// Three processes claim a queue where "api" is limited to 10 per second:
// no span of a second (by Redis's clock, in whole ms) holds more than 10
// of its claims, and the unlimited tasks among them are claimed at once.
func TestLimitRateFleetWide(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		name := map[bool]string{false: "standalone", true: "cluster"}[cluster]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const apis, quicks = 30, 10
			fleet := fleetOf(t, cluster)
			prefix := redistest.Prefix(t)
			ctx := testrig.Context(t, 60*time.Second)
			var queues []*queue.Queue
			for _, rdb := range fleet {
				queues = append(queues, newQueue(t, rdb, "tasks", queue.Config{Prefix: prefix}))
			}
			c, err := tasks.NewClient(queues[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := apiTask.SetLimit(ctx, c, tasks.Limit{Rate: 10, Per: time.Second}); err != nil {
				t.Fatal(err)
			}
			kind := map[string]string{}
			for i := range apis {
				id, err := apiTask.Enqueue(ctx, c, i)
				if err != nil {
					t.Fatal(err)
				}
				kind[id] = "api"
				if i%3 == 0 {
					id, err := quickTask.Enqueue(ctx, c, i)
					if err != nil {
						t.Fatal(err)
					}
					kind[id] = "quick"
				}
			}
			// Each claim's time by Redis's clock: its lease's deadline, less
			// the lease (the deadline is TIME rounded up to the ms).
			var mu sync.Mutex
			var apiAt, quickAt []int64
			var wg sync.WaitGroup
			for _, q := range queues {
				wg.Go(func() {
					for {
						mu.Lock()
						done := len(apiAt) == apis && len(quickAt) == quicks
						mu.Unlock()
						if done || ctx.Err() != nil {
							return
						}
						items, err := q.Claim(ctx, 4)
						if err != nil {
							t.Errorf("Claim: %v", err)
							return
						}
						for _, it := range items {
							at := it.Deadline.Add(-q.Config().Lease).UnixMilli()
							mu.Lock()
							if kind[it.ID] == "api" {
								apiAt = append(apiAt, at)
							} else {
								quickAt = append(quickAt, at)
							}
							mu.Unlock()
							if err := q.Ack(ctx, it, nil); err != nil {
								t.Errorf("Ack: %v", err)
							}
						}
						if len(items) == 0 {
							time.Sleep(5 * time.Millisecond) // a quiet poll, not a busy loop
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			slices.Sort(apiAt)
			slices.Sort(quickAt)
			// A claim at ms m is refused while 10 others are in (m-1000, m];
			// the times here may be rounded up by 1ms, so a window of 999ms.
			for i, at := range apiAt {
				in := 0
				for _, other := range apiAt[i:] {
					if other <= at+998 {
						in++
					}
				}
				if in > 10 {
					t.Fatalf("%d api claims in the second from %d: %v", in, at, apiAt)
				}
			}
			if span := apiAt[apis-1] - apiAt[0]; span < 2000 {
				t.Fatalf("30 api claims within %dms, want 3 seconds' worth", span)
			}
			if last := quickAt[quicks-1]; last >= apiAt[20] {
				t.Fatalf("the last quick task was claimed at %d, after the 21st api task (%d): held back", last, apiAt[20])
			}
		})
	}
}

// Limits read back as set; a bad one is refused.
func TestLimitsSetAndRead(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := testrig.Context(t, 10*time.Second)
	if err := slowTask.SetLimit(ctx, b.client, tasks.Limit{Running: 3, Rate: 100, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	got, err := b.client.Limits(ctx)
	if err != nil || len(got) != 1 || got["slow"] != (tasks.Limit{Running: 3, Rate: 100, Per: time.Minute}) {
		t.Fatalf("Limits = %+v, %v", got, err)
	}
	for _, bad := range []tasks.Limit{{Running: -1}, {Rate: 5}, {Rate: 5, Per: 25 * time.Hour}} {
		if err := slowTask.SetLimit(ctx, b.client, bad); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("SetLimit(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if err := tasks.Raw("bad type").SetLimit(ctx, b.client, tasks.Limit{Running: 1}); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("SetLimit of a bad type = %v, want ErrInvalidArgument", err)
	}
	if err := slowTask.SetLimit(ctx, b.client, tasks.Limit{}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.client.Limits(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Limits after lifting = %+v, %v", got, err)
	}
}
