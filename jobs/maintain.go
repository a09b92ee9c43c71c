package jobs

import (
	"context"
	"fmt"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/worksqueue"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TidyConfig configures [TidyStale]. The zero value is valid.
type TidyConfig struct {
	// Batching's defaults for TidyStale: Batch 500 expired leases per
	// script call, Name "tidy.QUEUE", RedisTimeout 250ms.
	Batching
}

// TidyStale returns the job that hands expired leases (of crashed or stuck
// workers) back to q's pending list, the longest expired first, or to its
// dead letters at their last attempt (q's Config.MaxAttempts, or the
// item's own), as each [queue.Queue.Claim] does first. A slice's Items
// counts the leases handed back; More says that its last batch was full.
// Expired results are dropped on the way, up to the batch.
//
// A [Drain] of q does this already, with each claim: TidyStale is for a
// queue that no Drain works, whose items your own code claims.
func TidyStale(q *queue.Queue, cfg TidyConfig) (recruiter.Job, error) {
	return queueStep{kind: "tidy", batch: tidyBatchDefault, run: (*qstore.Store).Tidy}.job(q, cfg.Batching)
}

// PromoteConfig configures [PromoteDue]. The zero value is valid.
type PromoteConfig struct {
	// Batching's defaults for PromoteDue: Batch 500 due items per script
	// call, Name "promote.QUEUE", RedisTimeout 250ms.
	Batching
}

// PromoteDue returns the job that moves q's delayed items (nacked, waiting
// for their retry, or enqueued with a delay) whose time has come to the
// pending list, the earliest due first, each in its priority's lane, as
// each [queue.Queue.Claim] does first. A slice's Items counts the items
// moved; More says that its last batch was full.
//
// A [Drain] of q does this already, with each claim: PromoteDue is for a
// queue that no Drain works, whose items your own code claims.
func PromoteDue(q *queue.Queue, cfg PromoteConfig) (recruiter.Job, error) {
	return queueStep{kind: "promote", batch: promoteBatchDefault, run: (*qstore.Store).Promote}.job(q, cfg.Batching)
}

// queueStep is one of a queue's maintenance steps, as a batched job: its
// name's kind, its default Batch, and the storage's method that does one
// batch (one script call).
type queueStep struct {
	kind  string
	batch int
	run   func(st *qstore.Store, ctx context.Context, max int) (int, error)
}

func (s queueStep) job(q *queue.Queue, cfg Batching) (recruiter.Job, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	st := qstore.Of(q)
	j, err := batchJob(drain.JobName(s.kind, q.Name()), cfg.withDefaults(s.batch), func(ctx context.Context, max int) (int, error) {
		return s.run(st, ctx, max)
	})
	if err != nil {
		return nil, err
	}
	j.(*batchedJob).queueMark = worksqueue.New(q.Config().Prefix, q.Name(), qstore.ScriptCommands)
	return j, nil
}
