package failover_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// BenchmarkReplicaWait is what waiting for a replica would cost a lock or
// an enqueue: a write alone, and the same write followed by WAIT 1 100 on
// its connection, in one round trip, on a primary with two replicas (all
// on loopback: a network adds its round trip to the replica). An enqueue
// is measured beside them for scale.
//
//	go test -run '^$' -bench ReplicaWait -benchtime 3s ./failover/
func BenchmarkReplicaWait(b *testing.B) {
	s := redistest.StartSentinel(b)
	rdb := s.Servers()[0].Client(b)
	ctx := context.Background()
	value := strings.Repeat("x", 100)

	b.Run("SET NX PX", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if err := rdb.SetNX(ctx, "lock:"+strconv.Itoa(i), value, time.Second).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SET NX PX, WAIT 1 100", func(b *testing.B) {
		i, unacked := 0, 0
		for b.Loop() {
			i++
			var wait *redis.Cmd
			if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.SetNX(ctx, "waited:"+strconv.Itoa(i), value, time.Second)
				wait = p.Do(ctx, "WAIT", 1, 100)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if n, err := wait.Int(); err != nil || n < 1 {
				unacked++
			}
		}
		b.ReportMetric(float64(unacked), "unacked")
	})
	b.Run("queue Enqueue", func(b *testing.B) {
		q, err := queue.New(rdb, "bench", queue.Config{})
		if err != nil {
			b.Fatal(err)
		}
		payload := []byte(value)
		for b.Loop() {
			if _, err := q.Enqueue(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}
