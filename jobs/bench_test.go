package jobs_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// benchSlice runs one slice as the recruiter would, with its default
// budget. A slice cut by its deadline is counted, not fatal: the recruiter
// counts it as a timeout and the next slice goes on.
func benchSlice(b *testing.B, job recruiter.Job, cut *int) recruiter.Report {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // the recruiter's default budget
	defer cancel()
	rep, err := job.Run(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		*cut++
	case err != nil:
		b.Fatalf("%s: %v", job.Name(), err)
	}
	return rep
}

var benchPayload = []byte("a payload of sixty-four bytes, about the size of a job reference")

// BenchmarkDrain drains b.N items through the Drain job in slices of the
// recruiter's default budget (50ms), with a handler that does nothing: the
// cost of the job and the queue per item. Round trips are those of the
// job's client only (the filling uses another).
func BenchmarkDrain(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run("batch-"+strconv.Itoa(batch), func(b *testing.B) {
			srv := redistest.Start(b)
			rdb, rt := srv.Client(b), &redistest.RoundTrips{}
			rdb.AddHook(rt)
			payloads := make([][]byte, b.N)
			for i := range payloads {
				payloads[i] = benchPayload
			}
			if _, err := newQueue(b, srv.Client(b), "bench", queue.Config{}).EnqueueBatch(context.Background(), payloads); err != nil {
				b.Fatal(err)
			}
			result := []byte("ok")
			handler := func(context.Context, queue.Item) ([]byte, error) { return result, nil }
			job, err := jobs.Drain(newQueue(b, rdb, "bench", queue.Config{}), handler, jobs.DrainConfig{Batching: jobs.Batching{Batch: batch}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			began, done, slices, cut := time.Now(), 0, 0, 0
			for done < b.N {
				done += benchSlice(b, job, &cut).Items
				slices++
			}
			elapsed := time.Since(began)
			b.StopTimer()
			if done != b.N {
				b.Fatalf("drained %d items, want %d", done, b.N)
			}
			b.ReportMetric(float64(done)/elapsed.Seconds(), "items/s")
			b.ReportMetric(float64(rt.Load())/float64(done), "roundtrips/item")
			b.ReportMetric(float64(slices)*1000/float64(done), "slices/1k-items")
			b.ReportMetric(float64(cut), "cut-slices")
		})
	}
}

const evictFields = 100_000

// BenchmarkEvictExpired evicts 100,000 expired fields of an expiring hash
// (beside 1,000 live ones) per op, in slices of the recruiter's default
// budget (50ms) until one reports no More. Round trips are counted by a
// hook on the job's client; the filling, by pipelines, uses another.
func BenchmarkEvictExpired(b *testing.B) {
	for _, batch := range []int{100, 500, 1000} {
		b.Run("batch-"+strconv.Itoa(batch), func(b *testing.B) {
			srv := redistest.Start(b)
			fill, rdb, rt := srv.Client(b), srv.Client(b), &redistest.RoundTrips{}
			rdb.AddHook(rt)
			h := mustHash(b, fill, "bench")
			job, err := jobs.EvictExpired(mustHash(b, rdb, "bench"), jobs.EvictConfig{Batching: jobs.Batching{Batch: batch}})
			if err != nil {
				b.Fatal(err)
			}
			setFields(b, h, "live-", 1000, time.Hour)
			values, _ := h.Keys()
			slices, cut := 0, 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				fillExpired(b, fill, h)
				b.StartTimer()
				for more := true; more; slices++ {
					more = benchSlice(b, job, &cut).More
				}
				b.StopTimer()
				if n := fill.HLen(context.Background(), values).Val(); n != 1000 {
					b.Fatalf("%d fields left, want the 1000 live ones", n)
				}
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(slices)/float64(b.N), "slices/op")
			b.ReportMetric(float64(cut), "cut-slices")
		})
	}
}

// fillExpired writes evictFields fields that expired a second ago, in the
// documented layout, by pipelines of 1,000 fields.
func fillExpired(b *testing.B, rdb *redis.Client, h *exphash.Hash) {
	ctx := context.Background()
	values, expiry := h.Keys()
	past := float64(redisNow(b, rdb).Add(-time.Second).UnixMilli())
	pipe := rdb.Pipeline()
	for start := 0; start < evictFields; start += 1000 {
		fields := make([]any, 0, 2000)
		scores := make([]redis.Z, 0, 1000)
		for i := start; i < start+1000; i++ {
			f := "old-" + strconv.Itoa(i)
			fields = append(fields, f, benchPayload)
			scores = append(scores, redis.Z{Score: past, Member: f})
		}
		pipe.HSet(ctx, values, fields...)
		pipe.ZAdd(ctx, expiry, scores...)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
