// Package inspect is the operators' API of a worksteal fleet, as asynq's
// Inspector is: it lists what Redis holds under a key prefix and acts on
// it, with nothing but a Redis client and the prefix. It is the one
// admin API: the worksteal CLI (cmd/worksteal) and the dashboard's
// actions run on it, and package queue keeps only what producers and
// workers call.
//
//	in, err := inspect.New(rdb, inspect.Config{Prefix: "worksteal"})
//	queues, err := in.Queues(ctx)               // each with its depth by state
//	page, err := in.Items(ctx, "mail", inspect.StateDead, 0, 50)
//	n, err := in.RetryDead(ctx, "mail", page.Items[0].ID)
//	err = in.Pause(ctx, "tasks.mail", 10*time.Minute) // fleet-wide
//
// # The registry
//
// Queues, jobs and task types are listed from a registry that the fleet
// writes under the prefix, so that no call needs SCAN: queue.New and a
// tasks.Mux's Job note what they make, in memory, and a recruiter writes
// its jobs and those notes (made with its own Redis client) from its pace
// timer, once a slice has reached Redis, and again whenever a job, queue
// or Mux job is added. Nothing is written on a request's path, and
// queue.New and Register still make no Redis call. An entry stays after
// its code is gone, with the time it was last registered; delete it with
// HDEL (the keys: {PREFIX:registry}:queues, :jobs and :types).
//
// # What it shows
//
// What Redis holds: each queue's items by state, each job's lock (running,
// resting, paused, a schedule's last tick, the fleet size the pacer
// counted). What each process counted (slices run, skipped, failed, their
// durations) lives in the processes: the dashboard and the metrics show
// it.
//
// # Acting
//
// Dead letters are retried or purged one, several (by id), the oldest up
// to a count, or all at a time; delayed items run now, by id; a task,
// chain or fan-out is canceled; a job is paused or resumed for the whole
// fleet, as recruiter.Recruiter's Pause and Resume do, without a
// recruiter. Queue and job names are checked against the registry (a
// queue it does not list yet is acted on if it holds anything), so that
// a typo fails with [ErrUnknownQueue] or [ErrUnknownJob] instead of
// acting on nothing.
//
// A queue's maintenance (due items made pending, expired leases handed
// back) is no operator's act: every claim does it, and for a queue that
// no one claims from, the jobs
// [github.com/worksteal/worksteal/jobs.PromoteDue] and
// [github.com/worksteal/worksteal/jobs.TidyStale].
//
// # Permissions
//
// The reads need a read-only ACL user; the actions need a few writes
// more. docs/redis.md gives both grants.
package inspect
