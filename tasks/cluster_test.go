package tasks_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testrig"
	"github.com/worksteal/worksteal/queue"
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
				d, err := b.q.Stats(ctx)
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
