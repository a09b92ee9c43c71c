package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

func benchClient(b *testing.B) (*redis.Client, *redistest.RoundTrips) {
	rdb := redistest.Start(b).Client(b)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	return rdb, rt
}

var benchPayload = []byte("a payload of sixty-four bytes, about the size of a job reference")

// fill enqueues n items in batches of BatchMax.
func fill(b *testing.B, q *queue.Queue, n int) {
	b.Helper()
	batch := make([][]byte, queue.BatchMax)
	for i := range batch {
		batch[i] = benchPayload
	}
	for n > 0 {
		k := min(n, queue.BatchMax)
		if _, err := q.EnqueueBatch(context.Background(), batch[:k]); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// BenchmarkClaimAck drains b.N items: Claim of a batch and one Settle for
// it (or an Ack per item), against a naive loop of one round trip per
// command per item.
func BenchmarkClaimAck(b *testing.B) {
	ctx := context.Background()
	result := []byte("done")
	run := func(b *testing.B, batch int, ackEach bool) {
		rdb, rt := benchClient(b) // a fresh server: no results left by other runs
		q := newQueue(b, rdb, "claimack", queue.Config{})
		fill(b, q, b.N)
		rt.Store(0)
		b.ResetTimer()
		outcomes := make([]queue.Settlement, 0, batch)
		for done := 0; done < b.N; {
			items, err := q.Claim(ctx, min(batch, b.N-done))
			if err != nil || len(items) == 0 {
				b.Fatalf("Claim: %d items, %v", len(items), err)
			}
			if ackEach {
				for _, it := range items {
					if err := q.Ack(ctx, it, result); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				outcomes = outcomes[:0]
				for _, it := range items {
					outcomes = append(outcomes, queue.Settlement{Item: it, Result: result})
				}
				if s, err := q.Settle(ctx, outcomes...); err != nil || s.Acked != len(items) {
					b.Fatalf("Settle = %+v, %v", s, err)
				}
			}
			done += len(items)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/item")
	}
	for _, batch := range []int{1, 100, 500} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) { run(b, batch, false) })
	}
	b.Run("batch=100/ack-each", func(b *testing.B) { run(b, 100, true) })
	b.Run("naive", func(b *testing.B) {
		rdb, rt := benchClient(b)
		naiveClaimAck(b, rdb, rt)
	})
}

// naiveClaimAck is the same work without scripts: LPOP, ZADD the lease,
// HGET the payload, then ack with ZREM, HDEL and SET of the result, each
// its own round trip.
func naiveClaimAck(b *testing.B, rdb *redis.Client, rt *redistest.RoundTrips) {
	ctx := context.Background()
	p := testPrefix(b)
	pending, leases, values := p+":pending", p+":leases", p+":values"
	for i := 0; i < b.N; i += 1000 {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+1000, b.N); j++ {
			id := strconv.Itoa(j)
			pipe.HSet(ctx, values, id, benchPayload)
			pipe.RPush(ctx, pending, id)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	rt.Store(0)
	b.ResetTimer()
	for range b.N {
		id, err := rdb.LPop(ctx, pending).Result()
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second).UnixMilli()
		if err := rdb.ZAdd(ctx, leases, redis.Z{Score: float64(deadline), Member: id}).Err(); err != nil {
			b.Fatal(err)
		}
		if _, err := rdb.HGet(ctx, values, id).Bytes(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.ZRem(ctx, leases, id).Err(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.HDel(ctx, values, id).Err(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.Set(ctx, p+":result:"+id, "done", 24*time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/item")
}

// BenchmarkTidy100k hands back 100,000 expired leases, BatchMax per call.
func BenchmarkTidy100k(b *testing.B) {
	const leases = 100_000
	rdb, rt := benchClient(b)
	ctx := context.Background()
	var trips int64
	for i := range b.N {
		b.StopTimer()
		q := newQueue(b, rdb, "tidy-"+strconv.Itoa(i), queue.Config{Lease: time.Millisecond})
		fill(b, q, leases)
		var last queue.Item
		for claimed := 0; claimed < leases; claimed += queue.BatchMax {
			items, err := q.Claim(ctx, queue.BatchMax)
			if err != nil || len(items) != queue.BatchMax {
				b.Fatalf("Claim: %d, %v", len(items), err)
			}
			last = items[len(items)-1]
		}
		untilRedisTime(b, rdb, last.Deadline.Add(time.Millisecond))
		rt.Store(0)
		b.StartTimer()
		total := 0
		for {
			n, err := qstore.Of(q).Tidy(ctx, queue.BatchMax)
			if err != nil {
				b.Fatal(err)
			}
			total += n
			if n < queue.BatchMax {
				break
			}
		}
		b.StopTimer()
		trips += rt.Load()
		if total != leases {
			b.Fatalf("tidied %d, want %d", total, leases)
		}
		if err := rdb.Del(ctx, keysOf(q)...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(leases*b.N)/b.Elapsed().Seconds(), "leases/s")
}

func keysOf(q *queue.Queue) []string {
	var ks []string
	for _, k := range []string{"pending", "leases", "values", "attempts", "ready", "causes", "delayed", "dead", "seq", "results", "expiring"} {
		ks = append(ks, tagOf(q)+":"+k)
	}
	return ks
}

// BenchmarkDepth measures each operation on a queue holding depth items in
// each of pending, leased and delayed: the costs must not grow with it.
// Every op leaves the depth as it found it. Compare the depths with
// benchstat -col /depth.
func BenchmarkDepth(b *testing.B) {
	for _, depth := range []int{1_000, 1_000_000} {
		rdb, _ := benchClient(b)
		ctx := context.Background()
		q := newQueue(b, rdb, "depth", queue.Config{Lease: time.Hour, BackoffBase: time.Hour, BackoffMax: time.Hour})
		fill(b, q, 2*depth)
		var outcomes []queue.Settlement
		for claimed := 0; claimed < 2*depth; claimed += queue.BatchMax {
			items, err := q.Claim(ctx, queue.BatchMax)
			if err != nil {
				b.Fatal(err)
			}
			if claimed%(2*queue.BatchMax) == 0 { // every other batch goes to delayed
				outcomes = outcomes[:0]
				for _, it := range items {
					outcomes = append(outcomes, queue.Settlement{Item: it, Err: fmt.Errorf("later")})
				}
				if _, err := q.Settle(ctx, outcomes...); err != nil {
					b.Fatal(err)
				}
			}
		}
		fill(b, q, depth)
		if s := mustDepth(b, q); s.Pending != int64(depth) || s.Leased != int64(depth) || s.Delayed != int64(depth) {
			b.Fatalf("setup: %+v, want %d of each", s, depth)
		}
		op := func(name string) string { return "op=" + name + "/depth=" + strconv.Itoa(depth) }
		b.Run(op("enqueue-claim-ack"), func(b *testing.B) {
			for range b.N {
				if _, err := q.Enqueue(ctx, benchPayload); err != nil {
					b.Fatal(err)
				}
				items, err := q.Claim(ctx, 1)
				if err != nil || len(items) != 1 {
					b.Fatalf("Claim: %v, %v", items, err)
				}
				if err := q.Ack(ctx, items[0], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(op("tidy-none-due"), func(b *testing.B) {
			for range b.N {
				if n, err := qstore.Of(q).Tidy(ctx, 100); n != 0 || err != nil {
					b.Fatalf("Tidy = %d, %v", n, err)
				}
			}
		})
		b.Run(op("promote-none-due"), func(b *testing.B) {
			for range b.N {
				if n, err := qstore.Of(q).Promote(ctx, 100); n != 0 || err != nil {
					b.Fatalf("Promote = %d, %v", n, err)
				}
			}
		})
		b.Run(op("stats"), func(b *testing.B) {
			for range b.N {
				if _, err := q.Depth(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
