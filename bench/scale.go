package main

import (
	"context"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// scaleRow is one job at one queue depth (experiment 4).
type scaleRow struct {
	Job           string
	Depth         int
	Items         int
	Slices        int
	RoundTrips    int64
	PerBatch      time.Duration // wall time per script call (Drain: per claim+settle)
	PerItem       time.Duration
	RedisPerBatch time.Duration // Redis's own time per call, from commandstats
	RTPerItem     float64
}

func scalePlan(quick bool) []int {
	if quick {
		return []int{1_000, 10_000, 100_000}
	}
	return []int{1_000, 10_000, 100_000, 1_000_000}
}

// runScale is experiment 4: TidyStale and Drain slices, as the recruiter
// runs them (default batch, 50 ms budget), on a queue holding 10^3 to
// 10^6 items.
func runScale(ctx context.Context, e *env, rep *report) error {
	if err := e.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	rdb, rt := newCountedClient(e.addr, 4)
	defer rdb.Close()
	q, err := queue.New(rdb, "scale", queue.Config{Prefix: "sc"})
	if err != nil {
		return err
	}
	short, err := queue.New(rdb, "scale", queue.Config{Prefix: "sc", Lease: time.Millisecond})
	if err != nil {
		return err
	}
	const tidyBatch = 500 // TidyStale's default, set here for the work below
	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Batch: tidyBatch}})
	if err != nil {
		return err
	}
	drain, err := jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return []byte("ok"), nil }, jobs.DrainConfig{})
	if err != nil {
		return err
	}
	payloads := make([][]byte, queue.BatchMax)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "%064d", i)
	}
	queued := 0
	for _, depth := range scalePlan(e.opts.quick) {
		t0 := time.Now()
		for queued < depth {
			n := min(depth-queued, len(payloads))
			if _, err := q.EnqueueBatch(ctx, payloads[:n]); err != nil {
				return fmt.Errorf("fill to %d: %w", depth, err)
			}
			queued += n
		}
		logf("scale: %d items queued (filled in %v)", depth, time.Since(t0).Round(time.Millisecond))
		work := min(depth/2, 10*tidyBatch)

		// Tidy: leases of 1 ms on `work` items, expired, handed back.
		for claimed := 0; claimed < work; {
			items, err := short.Claim(ctx, min(work-claimed, queue.BatchMax))
			if err != nil {
				return err
			}
			claimed += len(items)
		}
		time.Sleep(5 * time.Millisecond)
		row, err := runSlices(ctx, e, tidy, rt, work, depth)
		if err != nil {
			return err
		}
		rep.scale = append(rep.scale, row)

		// Drain `work` items (then put as many back, for the next depth).
		row, err = runSlices(ctx, e, drain, rt, work, depth)
		if err != nil {
			return err
		}
		rep.scale = append(rep.scale, row)
		queued -= row.Items
		logf("scale: %d: tidy %v/batch, drain %v/batch", depth, rep.scale[len(rep.scale)-2].PerBatch.Round(time.Microsecond), row.PerBatch.Round(time.Microsecond))
	}
	return e.rdb.FlushAll(ctx).Err()
}

// runSlices runs slices of job with the default budget until it has done
// want items or reports no More.
func runSlices(ctx context.Context, e *env, job recruiter.Job, rt *redistest.RoundTrips, want, depth int) (scaleRow, error) {
	row := scaleRow{Job: job.Name(), Depth: depth}
	s0, err := commandStats(ctx, e.rdb)
	if err != nil {
		return row, err
	}
	rt0 := rt.Load()
	var spent time.Duration
	for row.Items < want {
		sctx, cancel := context.WithTimeout(ctx, sliceBudget)
		t := time.Now()
		rep, err := job.Run(sctx)
		spent += time.Since(t)
		cancel()
		if err != nil {
			return row, fmt.Errorf("%s at depth %d: %w", job.Name(), depth, err)
		}
		row.Items += rep.Items
		row.Slices++
		if !rep.More {
			break
		}
	}
	row.RoundTrips = rt.Load() - rt0
	s1, err := commandStats(ctx, e.rdb)
	if err != nil {
		return row, err
	}
	d := deltaStats(s0, s1)
	calls := d.scripts()
	if row.Job == "drain.scale" {
		calls /= 2 // a batch is a claim and a settle
	}
	if calls > 0 {
		row.PerBatch = spent / time.Duration(calls)
		row.RedisPerBatch = time.Duration(d.scriptUsec()) * time.Microsecond / time.Duration(calls)
	}
	if row.Items > 0 {
		row.PerItem = spent / time.Duration(row.Items)
		row.RTPerItem = float64(row.RoundTrips) / float64(row.Items)
	}
	return row, nil
}
