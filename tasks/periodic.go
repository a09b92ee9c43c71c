package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/recruiter"
)

// periodicUniqueFor bounds how long a tick's task holds its unique key:
// long enough that a repeated run of the tick finds it, short enough to
// leave nothing behind.
const periodicUniqueFor = 24 * time.Hour

// Periodic returns a job named name that enqueues a task of type typ
// with args once per tick of the schedule it is registered with: a
// nightly report, a weekly digest.
//
//	job, err := tasks.Periodic(c, "nightly-report", "report", ReportArgs{Kind: "sales"})
//	err = rec.Register(job, recruiter.JobConfig{Schedule: "CRON_TZ=Europe/Paris 0 3 * * *"})
//
// The recruiter runs each tick once across the fleet ([recruiter.JobConfig]
// Schedule); the enqueue is also unique per tick (the tick's time is its
// [Unique] key, for a day), so that a tick run again (after a failover
// that lost its record) adds no second task while the first is live.
// opts are the task's usual options; a Unique among them is replaced. A
// slice run without a schedule's tick (registered with Every or Rate)
// fails with an error that says so.
func Periodic[A any](c *Client, name, typ string, args A, opts ...EnqueueOption) (recruiter.Job, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	case names.Check(name) != nil:
		return nil, fmt.Errorf("%w: job name: %v", ErrInvalidArgument, names.Check(name))
	case names.Check(typ) != nil:
		return nil, fmt.Errorf("%w: task type: %v", ErrInvalidArgument, names.Check(typ))
	}
	if _, err := c.codec.Marshal(args); err != nil {
		return nil, fmt.Errorf("%w: arguments of %s: %w", ErrInvalidArgument, typ, err)
	}
	opts = append(opts[:len(opts):len(opts)], nil) // room for the tick's key
	return recruiter.Func(name, func(ctx context.Context) (recruiter.Report, error) {
		tick, ok := recruiter.Tick(ctx)
		if !ok {
			return recruiter.Report{}, fmt.Errorf("tasks: periodic job %s ran without a tick: register it with a Schedule", name)
		}
		tickOpts := append([]EnqueueOption(nil), opts...)
		tickOpts[len(tickOpts)-1] = Unique(name+"@"+tick.UTC().Format(time.RFC3339Nano), periodicUniqueFor)
		if _, err := Enqueue(ctx, c, typ, args, tickOpts...); err != nil {
			return recruiter.Report{}, err
		}
		return recruiter.Report{Items: 1}, nil
	}), nil
}
