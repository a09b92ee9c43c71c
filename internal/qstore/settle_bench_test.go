package qstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// BenchmarkSettle settles batches of 100 claimed items, each as the
// variant says; the timer runs during the settles only. redis-µs/item is
// what Redis spent in the settle scripts per item, per INFO commandstats
// read around each.
func BenchmarkSettle(b *testing.B) {
	const batch = 100
	for _, v := range settleVariants() {
		b.Run(v.name, func(b *testing.B) {
			srv := redistest.Start(b)
			q, err := queue.New(srv.Client(b), "bench", queue.Config{MaxAttempts: 1 << 30, BackoffBase: 1, BackoffMax: 1})
			if err != nil {
				b.Fatal(err)
			}
			st := qstore.Of(q)
			ctx := context.Background()
			payloads := make([][]byte, batch)
			for i := range payloads {
				payloads[i] = []byte("payload")
			}
			if _, err := st.EnqueueBatchWith(ctx, payloads, qstore.EnqueueOptions{}); err != nil {
				b.Fatal(err)
			}
			outcomes := make([]qstore.Settlement, batch)
			var usec int64
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				if done > 0 && v.comesBack {
					if _, err := st.Promote(ctx, batch); err != nil {
						b.Fatal(err)
					}
				} else if done > 0 {
					if _, err := st.EnqueueBatchWith(ctx, payloads, qstore.EnqueueOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				items, err := st.Claim(ctx, batch)
				if err != nil || len(items) != batch {
					b.Fatalf("Claim: %d items, %v", len(items), err)
				}
				for i, it := range items {
					outcomes[i] = qstore.Settlement{Item: it, Result: []byte("done"), Err: v.err}
				}
				before := srv.CommandTimes(b)["evalsha"].Usec
				b.StartTimer()
				if _, err := st.Settle(ctx, outcomes...); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				usec += srv.CommandTimes(b)["evalsha"].Usec - before
				b.StartTimer()
			}
			b.ReportMetric(float64(usec)/float64(max(b.N, batch)), "redis-µs/item")
		})
	}
}

type settleVariant struct {
	name      string
	err       error
	comesBack bool // the settled items are due at once: promoted, not enqueued
}

var errBench = errors.New("failed")

func settleVariants() []settleVariant {
	return []settleVariant{
		{name: "ack"},
		{name: "nack", err: errBench, comesBack: true},
		{name: "retryin", err: qstore.NewVerdict(qstore.RetryIn, 0, errBench), comesBack: true},
		{name: "deadnow", err: qstore.NewVerdict(qstore.DeadNow, 0, errBench)},
		// An hour: the claims take new items, not these back.
		{name: "snooze", err: qstore.NewVerdict(qstore.Snooze, time.Hour, errBench)},
	}
}
