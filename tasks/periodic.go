package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/worksqueue"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// periodicUniqueFor bounds how long a tick's task holds its unique key:
// long enough that a repeated run of the tick finds it, short enough to
// leave nothing behind.
const periodicUniqueFor = 24 * time.Hour

// Periodic returns a job named name that enqueues the task with args
// once per tick of the schedule it is registered with: a nightly report,
// a weekly digest:
//
//	job, err := report.Periodic(c, "nightly-report", ReportArgs{Kind: "sales"})
//	err = rec.Register(job, recruiter.JobConfig{Schedule: "CRON_TZ=Europe/Paris 0 3 * * *"})
//
// The recruiter runs each tick once across the fleet ([recruiter.JobConfig]
// Schedule); the enqueue is also unique per tick (the tick's time is its
// [Unique] key, for a day), so that a tick run again (after a failover
// that lost its record) adds no second task while the first is live.
// opts are the task's usual options but Unique, whose place the tick's
// key takes. args are encoded once, here.
//
// What a tick's enqueue would refuse is refused here, as [Task.Enqueue]
// refuses it: a nil Client, an invalid name or type, arguments that do
// not encode, a Unique or an option out of its bounds with an error
// wrapping [ErrInvalidArgument], a task above the queue's MaxPayload
// with one wrapping [queue.ErrPayloadTooLarge]. A slice run without a
// schedule's tick (registered with Every or Rate) fails with an error
// that says so.
func (t Task[A, R]) Periodic(c *Client, name string, args A, opts ...EnqueueOption) (recruiter.Job, error) {
	typ := t.typ
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	case names.Check(name) != nil:
		return nil, fmt.Errorf("%w: job name: %v", ErrInvalidArgument, names.Check(name))
	case names.Check(typ) != nil:
		return nil, fmt.Errorf("%w: task type: %v", ErrInvalidArgument, names.Check(typ))
	}
	payload, err := t.encode(c, args)
	if err != nil {
		return nil, err
	}
	var given enqueueOptions
	if applyOptions(&given, opts); given.uniqueSet {
		return nil, fmt.Errorf("%w: periodic %s: Unique does not apply: each tick's task is unique by itself", ErrInvalidArgument, name)
	}
	// A tick's options are these with its key, checked with the longest
	// key a tick has.
	longest := tickKey(name, time.Date(2006, 1, 2, 15, 4, 5, 999999999, time.UTC))
	base, err := queueOptions(typ, append(opts[:len(opts):len(opts)], Unique(longest, periodicUniqueFor)))
	if err == nil {
		err = c.st.Check(payload, storeOptions(base))
	}
	if errors.Is(err, queue.ErrInvalidArgument) {
		return nil, fmt.Errorf("%w: periodic %s: %w", ErrInvalidArgument, name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: periodic %s: %w", name, err)
	}
	run := recruiter.Func(name, func(ctx context.Context) (recruiter.Report, error) {
		tick, ok := recruiter.Tick(ctx)
		if !ok {
			return recruiter.Report{}, fmt.Errorf("tasks: periodic job %s ran without a tick: register it with a Schedule", name)
		}
		o := base
		o.Unique = uniqueKey(typ, tickKey(name, tick))
		ctx, sent := c.send(ctx, typ, 1, 0)
		so := storeOptions(o)
		so.Trace = sent.trace
		id, _, err := c.st.EnqueueWith(ctx, payload, so)
		sent.end(id, err)
		if err != nil {
			return recruiter.Report{}, fmt.Errorf("tasks: periodic %s: enqueue %s: %w", name, typ, err)
		}
		return recruiter.Report{Items: 1}, nil
	})
	return periodicJob{run, worksqueue.New(c.q.Config().Prefix, c.q.Name(), qstore.ScriptCommands)}, nil
}

// periodicJob is a periodic task's job, which says what queue it fills
// for the recruiter's check of its prefix.
type periodicJob struct {
	recruiter.Job
	queueMark
}

type queueMark = worksqueue.Mark

// tickKey is the unique key of the periodic job name's task of tick.
func tickKey(name string, tick time.Time) string {
	return name + "@" + tick.UTC().Format(time.RFC3339Nano)
}
