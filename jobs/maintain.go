package jobs

import (
	"context"
	"fmt"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TidyConfig configures [TidyStale]. The zero value is valid.
type TidyConfig struct {
	// Batching's defaults for TidyStale: Batch 500 expired leases per call
	// of [queue.Queue.Tidy], Name "tidy.QUEUE", RedisTimeout 250ms.
	Batching
}

// TidyStale returns the job that hands expired leases (of crashed or stuck
// workers) back to q's pending list, or to its dead letters at the last
// attempt, with [queue.Queue.Tidy]. A slice's Items counts the leases
// handed back; More says that its last batch was full.
//
// A [Drain] of q does this already, with each claim: TidyStale is for a
// queue that no Drain works, whose items your own code claims.
func TidyStale(q *queue.Queue, cfg TidyConfig) (recruiter.Job, error) {
	return queueStep{kind: "tidy", batch: tidyBatchDefault, run: (*queue.Queue).Tidy}.job(q, cfg.Batching)
}

// PromoteConfig configures [PromoteDue]. The zero value is valid.
type PromoteConfig struct {
	// Batching's defaults for PromoteDue: Batch 500 due items per call of
	// [queue.Queue.Promote], Name "promote.QUEUE", RedisTimeout 250ms.
	Batching
}

// PromoteDue returns the job that moves q's delayed items (nacked, waiting
// for their retry, or enqueued with a delay) whose time has come to the
// pending list, with [queue.Queue.Promote]. A slice's Items counts the
// items moved; More says that its last batch was full.
//
// A [Drain] of q does this already, with each claim: PromoteDue is for a
// queue that no Drain works, whose items your own code claims.
func PromoteDue(q *queue.Queue, cfg PromoteConfig) (recruiter.Job, error) {
	return queueStep{kind: "promote", batch: promoteBatchDefault, run: (*queue.Queue).Promote}.job(q, cfg.Batching)
}

// queueStep is one of a queue's maintenance steps, as a batched job: its
// name's kind, its default Batch, and the method that does one batch.
type queueStep struct {
	kind  string
	batch int
	run   func(q *queue.Queue, ctx context.Context, max int) (int, error)
}

func (s queueStep) job(q *queue.Queue, cfg Batching) (recruiter.Job, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	return batchJob(drain.JobName(s.kind, q.Name()), cfg.withDefaults(s.batch), func(ctx context.Context, max int) (int, error) {
		return s.run(q, ctx, max)
	})
}
