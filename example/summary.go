package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// report prints a summary every few seconds until ctx is done (nil) or a
// server stops on its own (its error).
func (a *app) report(ctx context.Context, failed <-chan error, out io.Writer, every time.Duration) error {
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case <-tick.C:
			fmt.Fprintln(out, a.summary(ctx, fmt.Sprintf("t=%v", time.Since(start).Round(time.Second))))
		}
	}
}

// summary is two lines: this process's requests by stack and its orders
// (a worker: the orders it sent), the queue and the sessions in Redis; then each job's slices in this process,
// as ran/skipped/failed:items.
func (a *app) summary(ctx context.Context, label string) string {
	var b strings.Builder
	c := &a.count
	switch a.role {
	case roleWorker:
		fmt.Fprintf(&b, "%-6s worker orders sent=%d", label, c.sent.Load())
	default:
		stolen, worker := c.sent.Load(), c.workerSent.Load()
		fmt.Fprintf(&b, "%-6s requests http=%d echo=%d grpc=%d fast=%d failed=%d | orders placed=%d sent=%d",
			label, c.http.Load(), c.echo.Load(), c.grpc.Load(), c.fast.Load(), c.failed.Load(), c.placed.Load(), stolen+worker)
		if a.role == roleBoth {
			fmt.Fprintf(&b, " (stolen=%d worker=%d)", stolen, worker)
		}
	}
	if q, err := a.orders.Depth(ctx); err != nil {
		fmt.Fprintf(&b, " | queue: %v", err)
	} else {
		fmt.Fprintf(&b, " | queue pending=%d leased=%d delayed=%d dead=%d", q.Pending, q.Leased, q.Delayed, q.Dead)
	}
	if stored, expired, err := a.sessionCounts(ctx); err != nil {
		fmt.Fprintf(&b, " | sessions: %v", err)
	} else {
		fmt.Fprintf(&b, " | sessions stored=%d expired=%d", stored, expired)
	}
	fmt.Fprintf(&b, "\n%-6s jobs", "")
	for _, j := range a.rec.Stats().Jobs {
		fmt.Fprintf(&b, " %s=%d/%d/%d:%d", j.Name, j.Ran, j.Skipped(), j.Failed(), j.Items)
	}
	b.WriteString(" (ran/skipped/failed:items)")
	return b.String()
}
