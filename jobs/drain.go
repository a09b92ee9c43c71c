package jobs

import (
	"context"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Handler does the work of one claimed item and returns its result (nil
// stores an empty one), or an error to nack it: the item is retried after
// the queue's backoff, or dead-lettered with the error as cause at its last
// attempt (an error made by package tasks' DeadLetter, RetryAfter or Snooze
// steers it as [queue.Queue.Settle] says). ctx ends a margin before the item's lease (see [Drain]), not
// with the slice's budget. A slice runs several handlers at once
// (DrainConfig.Concurrency), so a Handler must be safe for concurrent
// use, and idempotent: delivery is at least once. What a handler needs
// of its task is on it: ID, Attempt, MaxAttempts (the last attempt's
// failure dead-letters it), Deadline and [queue.Item.EnqueuedAt].
type Handler func(ctx context.Context, it queue.Item) (result []byte, err error)

// DrainConfig configures [Drain]. The zero value is valid.
type DrainConfig struct {
	// Batching's defaults for Drain: Batch 100 items per call of
	// [queue.Queue.Claim] (later batches of a slice may claim fewer, as
	// many as the budget left fits), Name "drain.QUEUE", RedisTimeout
	// 250ms. RedisTimeout bounds each of Claim, Settle and Release: they
	// are not cut at the slice's deadline, since a claim cut short would
	// strand its items in leases until they expire (each losing an
	// attempt), and a settle cut short would have them done again; so a
	// slice that misjudged its budget ends late by one call rather than
	// early.
	Batching
	// Concurrency is how many handlers a slice runs at once, from 1 to
	// 1,000. Handlers that wait (on an upstream, a mail provider) overlap
	// their waits. Handlers that burn CPU compete with the web server's
	// requests: Drain measures them (on Linux) and runs fewer at once, so
	// that together they burn at most half the process's CPUs (see the
	// package doc). Default 32.
	Concurrency int
}

// Drain returns the job that works q off in slices: it claims batches,
// runs handler on their items, up to cfg.Concurrency at once, and settles
// the outcomes (acks the results, nacks the errors). Its claims also bring
// back q's due delayed items and expired leases, so Drain alone keeps a
// queue moving. A slice's Items counts the items settled; More says that
// work may be left. Up to 4 slices run at once ([recruiter.JobConfig].Slices).
//
// The budget bounds when a slice starts items, not how long they run: a
// started handler runs to its end (the job is a [recruiter.Finisher]),
// its context ending a margin before the item's lease. The items a slice
// does not start, past its budget or once its process is busy
// ([recruiter.Busy]), go back to the queue, their attempt uncounted.
// Handlers that burn CPU leave half the process's CPUs to its requests.
//
// An item never starts once its [queue.Queue.Cancel] returned nil; a
// running one's context ends with [queue.ErrCanceled] as its cause within
// 100 ms and a round trip, its outcome dropped. A panic nacks its item
// alone; the slice goes on, and returns an error wrapping [ErrHandlerPanic].
func Drain(q *queue.Queue, handler Handler, cfg DrainConfig) (recruiter.Job, error) {
	var h drain.Handler // nil for a nil handler, which drain.New refuses
	if handler != nil {
		h = func(ctx context.Context, it qstore.Item) ([]byte, *qstore.FollowUp, error) {
			result, err := handler(ctx, queue.Item(it))
			return result, nil, err
		}
	}
	return drain.New(q, h, drain.Config{Batching: drain.Batching(cfg.Batching), Concurrency: cfg.Concurrency})
}
