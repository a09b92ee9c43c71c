package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// The tasks job on a 3-master cluster: three queues under the prefixes of
// their subtests, so on three slots (spread over the masters as CRC16
// falls), each with its tasks done, a failing one dead-lettered and a Call
// answered.
func TestJobOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	for i := range 3 {
		t.Run("queue-"+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			b := setup(t, cc, fastRetries)
			mustHandle(t, b.mux, "add", add)
			mustHandle(t, b.mux, "fail", func(context.Context, int) (int, error) { return 0, fmt.Errorf("failed on queue %d", i) })
			ids := make([]string, 30)
			for j := range ids {
				ids[j] = mustEnqueue(t, b.client, "add", addArgs{A: i, B: j})
			}
			failing := mustEnqueue(t, b.client, "fail", 0)
			cl := goCall[addArgs, sum](t, b.client, "add", addArgs{A: 100, B: i})
			ctx := testrig.Context(t, 30*time.Second)
			b.drive(t, "every task done or dead", func() bool {
				d, err := b.q.Depth(ctx)
				return err == nil && cl.finished() && d == queue.Depth{Dead: 1}
			})
			for j, id := range ids {
				if res, err := b.q.Result(ctx, id); err != nil || string(res) != fmt.Sprintf(`{"Sum":%d,"Label":""}`, i+j) {
					t.Fatalf("Result(%s) = %s, %v; want the sum %d", id, res, err, i+j)
				}
			}
			wantDead(t, b.q, failing, fmt.Sprintf("failed on queue %d", i))
			if cl.err != nil || cl.result.Sum != 100+i {
				t.Fatalf("Call = %+v, %v; want the sum %d", cl.result, cl.err, 100+i)
			}
		})
	}
}

// Enqueue options on a 3-master cluster, on three queues (three slots):
// 20 concurrent unique enqueues add one task, a delayed task (and two of
// one EnqueueMany) waits, and a task's own attempts dead-letter it.
func TestEnqueueOptionsOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	for i := range 3 {
		t.Run("queue-"+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			b := setup(t, cc, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 5})
			mustHandle(t, b.mux, "add", add)
			mustHandle(t, b.mux, "fail", func(context.Context, int) (int, error) { return 0, errors.New("no") })
			ctx := testrig.Context(t, 30*time.Second)
			ids := make([]string, 20)
			var wg sync.WaitGroup
			for j := range ids {
				wg.Go(func() {
					var err error
					if ids[j], err = enqueue(ctx, b.client, "add", addArgs{A: i, B: j}, tasks.Unique("one", time.Minute)); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] {
					t.Fatalf("unique enqueues returned %s and %s", ids[0], id)
				}
			}
			later := mustEnqueueWith(t, b.client, "add", addArgs{A: 100}, tasks.Delay(50*time.Millisecond))
			failing := mustEnqueueWith(t, b.client, "fail", 0, tasks.Attempts(2))
			many, err := addTask.EnqueueMany(ctx, b.client, []addArgs{{A: 200}, {A: 300}}, tasks.Delay(50*time.Millisecond), tasks.Attempts(2))
			if err != nil || len(many) != 2 {
				t.Fatalf("EnqueueMany = %v, %v", many, err)
			}
			if d, err := b.q.Depth(ctx); err != nil || d.Pending != 2 || d.Delayed != 3 {
				t.Fatalf("Depth = %+v, %v; want 2 pending, 3 delayed", d, err)
			}
			b.drive(t, "every task done or dead", func() bool {
				d, err := b.q.Depth(ctx)
				return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 1})
			})
			for id, want := range map[string]string{later: `{"Sum":100,"Label":""}`, many[0]: `{"Sum":200,"Label":""}`, many[1]: `{"Sum":300,"Label":""}`} {
				if res, err := b.q.Result(ctx, id); err != nil || string(res) != want {
					t.Fatalf("the delayed task %s's Result = %s, %v; want %s", id, res, err, want)
				}
			}
			if dead, err := testrig.DeadLetters(ctx, b.q, 10); err != nil || len(dead) != 1 || dead[0].ID != failing || dead[0].Attempts != 2 {
				t.Fatalf("Dead = %+v, %v; want %s after 2 attempts", dead, err, failing)
			}
		})
	}
}

// Chains on a 3-master cluster, on three queues (three slots): each
// chain's steps, its record and its waiter stay on its queue's slot; one
// chain finishes, one stops at its dead step.
func TestChainsOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	for i := range 3 {
		t.Run("queue-"+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			b := setup(t, cc, fastRetries)
			ran := map[string]*atomic.Int64{}
			chainMux(t, b, ran)
			ctx := testrig.Context(t, 30*time.Second)
			ok, err := tasks.EnqueueChain(ctx, b.client, chainOf("q", i, 1))
			if err != nil {
				t.Fatal(err)
			}
			bad, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{stepOf("add", addArgs{}), stepOf("fail", nil)})
			if err != nil {
				t.Fatal(err)
			}
			b.drive(t, "both chains ended", func() bool {
				d, err := b.q.Depth(ctx)
				return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 1})
			})
			if got, err := tasks.WaitChain[string](ctx, b.client, ok); err != nil || got != fmt.Sprintf("q=%d", 2*(i+1)) {
				t.Fatalf("WaitChain = %q, %v", got, err)
			}
			if _, err := tasks.WaitChain[string](ctx, b.client, bad); !errors.Is(err, queue.ErrDead) {
				t.Fatalf("WaitChain of the failing chain: %v, want ErrDead", err)
			}
		})
	}
}

// Fan-outs on a 3-master cluster, on three queues (three slots): the
// children, the record and the final step stay on their queue's slot;
// one fan-out ends, one fails at its dead child.
func TestFanOutsOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	for i := range 3 {
		t.Run("queue-"+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			b := setup(t, cc, fastRetries)
			fanOutMux(t, b)
			ctx := testrig.Context(t, 30*time.Second)
			ok, err := tasks.EnqueueFanOut(ctx, b.client, squares(20+i), stepOf("total", "q"))
			if err != nil {
				t.Fatal(err)
			}
			bad, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{stepOf("broken", struct{}{})}, stepOf("total", "q"))
			if err != nil {
				t.Fatal(err)
			}
			b.drive(t, "both fan-outs ended", func() bool {
				d, err := b.q.Depth(ctx)
				return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 1})
			})
			if got, err := tasks.WaitFanOut[string](ctx, b.client, ok); err != nil || got != fmt.Sprintf("q=%d/%d", sumOfSquares(20+i), 20+i) {
				t.Fatalf("WaitFanOut = %q, %v", got, err)
			}
			if _, err := tasks.WaitFanOut[string](ctx, b.client, bad); !errors.Is(err, queue.ErrDead) {
				t.Fatalf("WaitFanOut of the failing fan-out: %v, want ErrDead", err)
			}
		})
	}
}
