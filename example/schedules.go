package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// The shop's schedules, at a demo cadence: what a shop runs nightly or
// hourly runs every few seconds here, so that the dashboard, /metrics
// (worksteal_job_next_tick_seconds) and the Grafana board's schedule
// panels show them within seconds of `make run`. Both run fleet-wide once
// per tick, at any traffic including none (recruiter.JobConfig.Schedule).
const (
	// reportSchedule is a nightly report's "0 3 * * *", every 10 s.
	reportSchedule = "*/10 * * * * *"
	reportJob      = "nightly-report"
	reportKey      = "example:report:sales" // the last report, as JSON

	// trimSchedule is an hourly chore's "0 * * * *", every 15 s.
	trimSchedule = "*/15 * * * * *"
	trimJob      = "trim-popular"
	popularKeep  = 100 // the items whose reads trim-popular keeps counting
)

// salesReport is the report task's arguments and result: what it covers,
// and then what it found.
type salesReport struct {
	Kind      string    `json:"kind"`
	Confirmed int64     `json:"confirmed,omitempty"` // confirmations sent, all time
	Charged   int64     `json:"charged,omitempty"`   // orders charged, all time
	At        time.Time `json:"at,omitzero"`
}

// reportTask writes the sales report. nightly-report enqueues one per
// tick (tasks.Task.Periodic) on the orders' queue, where the tasks job
// runs it beside the orders' steps.
var reportTask = tasks.Define[salesReport, salesReport]("report.sales")

// registerSchedules registers the two scheduled jobs: nightly-report,
// which enqueues a report task per tick (its handler is on the app's Mux,
// see newApp), and trim-popular, a plain job run per tick.
func (a *app) registerSchedules() error {
	report, err := reportTask.Periodic(a.client, reportJob, salesReport{Kind: "sales"})
	if err != nil {
		return err
	}
	// A tick's slice is one or two round trips; a second, not the default
	// 50 ms, so that a loaded machine does not time out a once-a-tick run.
	return errors.Join(
		a.rec.Register(report, recruiter.JobConfig{Schedule: reportSchedule, Budget: time.Second}),
		a.rec.Register(recruiter.Func(trimJob, a.trimPopular), recruiter.JobConfig{Schedule: trimSchedule, Budget: time.Second}),
	)
}

// salesReport counts the confirmations sent and the orders charged, and
// stores the report; a report run again writes a fresher one.
func (a *app) salesReport(ctx context.Context, r salesReport) (salesReport, error) {
	pipe := a.rdb.Pipeline()
	sent := pipe.HLen(ctx, sentKey)
	charged := pipe.HLen(ctx, chargedKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return salesReport{}, err
	}
	r.Confirmed, r.Charged, r.At = sent.Val(), charged.Val(), time.Now().UTC()
	body, err := json.Marshal(r)
	if err != nil {
		return salesReport{}, err
	}
	return r, a.rdb.Set(ctx, reportKey, body, 0).Err()
}

// trimPopular keeps the read counts of the popularKeep most read items,
// so that the set refresh-popular reads stays small; an item dropped
// counts again from its next read.
func (a *app) trimPopular(ctx context.Context) (recruiter.Report, error) {
	n, err := a.rdb.ZRemRangeByRank(ctx, popularKey, 0, -popularKeep-1).Result()
	return recruiter.Report{Items: int(n)}, err
}
