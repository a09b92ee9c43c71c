package drain

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// Handlers that burn CPU take at most half the process's CPUs, however
// high Concurrency is; handlers that wait keep it. Each drain works 64
// items of 3ms in batches of 16, 16 handlers allowed: the first batch
// runs 16 at once blind; after it, the burning ones run GOMAXPROCS/2 (at
// least one) at a time, while the waiting ones still run 16 (8 or more
// on a loaded machine). Both yield
// their CPU between items (not checked here: the fleet benchmark's
// CPU-bound rows measure what that does to requests).
func TestDrainHandlersThatBurnCPUTakeHalfTheCPUs(t *testing.T) {
	// Not parallel: this package's other tests would share the CPUs.
	limit := max(1, runtime.GOMAXPROCS(0)/2)
	for _, burns := range []bool{true, false} {
		q := newQueue(t, "jobs", queue.Config{})
		ids := enqueue(t, q, "item-", 64)
		c := &calls{}
		var running atomic.Int32
		var mu sync.Mutex
		var seen []int32 // how many ran at once as each item after the first batch began
		var started atomic.Int32
		h := func(ctx context.Context, it qstore.Item) ([]byte, *qstore.FollowUp, error) {
			n := running.Add(1)
			defer running.Add(-1)
			if started.Add(1) > 16 {
				mu.Lock()
				seen = append(seen, n)
				mu.Unlock()
			}
			if burns {
				x, began := uint64(1), time.Now()
				for time.Since(began) < 3*time.Millisecond {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
				_ = x
			} else {
				time.Sleep(3 * time.Millisecond)
			}
			return c.echo(it)
		}
		made, err := New(q, h, Config{Batching: Batching{Batch: 16}, Concurrency: 16})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		job := made.(*drainJob)
		for settled := 0; settled < len(ids); {
			items, err := runSlice(job, 2*time.Second)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			settled += items
		}
		wantResults(t, q, c, "item-", ids)
		slices.Sort(seen)
		if len(seen) == 0 {
			t.Fatal("no item began after the first batch")
		}
		median, most := seen[len(seen)/2], seen[len(seen)-1]
		if burns {
			// While other processes take part of the CPUs, a burning
			// handler reads as part of a core, and more may run: twice the
			// bound is still far below Concurrency. (How many run at once
			// says less: GOMAXPROCS bounds it for handlers that never block.)
			if median > int32(2*limit) || job.handlersLearnt() > 2*limit {
				t.Errorf("burning: after the first batch a median of %d handlers ran at once (most %d), %d allowed at the end; want at most %d, twice GOMAXPROCS/2 (GOMAXPROCS %d)",
					median, most, job.handlersLearnt(), 2*limit, runtime.GOMAXPROCS(0))
			}
		} else if most < 8 || job.handlersLearnt() < 8 {
			// A waiting handler's sampled CPU (its wake-ups and settling,
			// under -race) is a few % of its 3ms; on a loaded machine it
			// read 5 % once, which allows 10: still far above the burning
			// ones' 2, the distinction this test is about.
			t.Errorf("waiting: after the first batch at most %d handlers ran at once, %d allowed at the end; want 8 or more of both (16 on an idle machine)", most, job.handlersLearnt())
		}
	}
}
