package qstore_test

import (
	"context"
	"testing"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// BenchmarkTraceCost enqueues, claims and acks batches of 100 items, with
// a trace context each ("traced") or none, and reports what Redis spent
// in the scripts per item, per INFO commandstats: redis-µs/item and
// cmds/item, the commands the scripts ran.
func BenchmarkTraceCost(b *testing.B) {
	const batch = 100
	for _, v := range []struct {
		name  string
		trace string
	}{{"untraced", ""}, {"traced", traceA}} {
		b.Run(v.name, func(b *testing.B) {
			srv := redistest.Start(b)
			q, err := queue.New(srv.Client(b), "bench", queue.Config{})
			if err != nil {
				b.Fatal(err)
			}
			st := qstore.Of(q)
			ctx := context.Background()
			payloads := make([][]byte, batch)
			for i := range payloads {
				payloads[i] = []byte("payload")
			}
			outcomes := make([]qstore.Settlement, batch)
			before := srv.CommandTimes(b)
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				if _, err := st.EnqueueBatchWith(ctx, payloads, qstore.EnqueueOptions{Trace: v.trace}); err != nil {
					b.Fatal(err)
				}
				items, err := st.Claim(ctx, batch)
				if err != nil || len(items) != batch || items[0].Trace != v.trace {
					b.Fatalf("Claim: %d items, %v", len(items), err)
				}
				for i, it := range items {
					outcomes[i] = qstore.Settlement{Item: it, Result: []byte("done")}
				}
				if _, err := st.Settle(ctx, outcomes...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := srv.CommandTimes(b)
			var usec, cmds int64
			for name, a := range after {
				switch name {
				case "evalsha", "eval":
					usec += a.Usec - before[name].Usec
				case "info", "script|load", "hello", "client|setinfo", "ping":
				default:
					cmds += a.Calls - before[name].Calls
				}
			}
			n := float64(max(b.N, batch))
			b.ReportMetric(float64(usec)/n, "redis-µs/item")
			b.ReportMetric(float64(cmds)/n, "cmds/item")
		})
	}
}
