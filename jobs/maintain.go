package jobs

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TidyConfig configures [TidyStale]. The zero value is valid: every field
// has a documented default.
type TidyConfig struct {
	// Batch is how many expired leases one call of [queue.Queue.Tidy]
	// hands back, at most [BatchMax]. Default 500.
	Batch int
	// MaxBatches bounds the batches of one slice. Default 0: as many as
	// its budget allows.
	MaxBatches int
	// Name overrides the job's name, "tidy.QUEUE" by default.
	Name string
	// RedisTimeout bounds each script call. A call is not cut at the
	// slice's deadline, as its work would be done in Redis all the same but
	// go uncounted; rather, a slice starts no batch that the budget left
	// does not fit. Default 250ms, at most 10s.
	RedisTimeout time.Duration
}

func (c TidyConfig) validate() error {
	return validateCommon(c.Batch, c.MaxBatches, c.Name, c.RedisTimeout)
}

func (c TidyConfig) withDefaults() TidyConfig {
	c.Batch = cmp.Or(c.Batch, TidyBatchDefault)
	c.RedisTimeout = cmp.Or(c.RedisTimeout, RedisTimeoutDefault)
	return c
}

// TidyStale returns the job that hands expired leases (of crashed or stuck
// workers) back to q's pending list, or to its dead letters at the last
// attempt, with [queue.Queue.Tidy]. A slice's Items counts the leases
// handed back; More says that its last batch was full.
func TidyStale(q *queue.Queue, cfg TidyConfig) (recruiter.Job, error) {
	cfg = cfg.withDefaults()
	return queueJob(q, "tidy", (*queue.Queue).Tidy, cfg.validate(), cfg.Batch, cfg.MaxBatches, cfg.Name, cfg.RedisTimeout)
}

// PromoteConfig configures [PromoteDue]. The zero value is valid: every
// field has a documented default.
type PromoteConfig struct {
	// Batch is how many due items one call of [queue.Queue.Promote] moves,
	// at most [BatchMax]. Default 500.
	Batch int
	// MaxBatches bounds the batches of one slice. Default 0: as many as
	// its budget allows.
	MaxBatches int
	// Name overrides the job's name, "promote.QUEUE" by default.
	Name string
	// RedisTimeout bounds each script call. A call is not cut at the
	// slice's deadline, as its work would be done in Redis all the same but
	// go uncounted; rather, a slice starts no batch that the budget left
	// does not fit. Default 250ms, at most 10s.
	RedisTimeout time.Duration
}

func (c PromoteConfig) validate() error {
	return validateCommon(c.Batch, c.MaxBatches, c.Name, c.RedisTimeout)
}

func (c PromoteConfig) withDefaults() PromoteConfig {
	c.Batch = cmp.Or(c.Batch, PromoteBatchDefault)
	c.RedisTimeout = cmp.Or(c.RedisTimeout, RedisTimeoutDefault)
	return c
}

// PromoteDue returns the job that moves q's delayed items (nacked, waiting
// for their retry) whose time has come to the pending list, with
// [queue.Queue.Promote]. A slice's Items counts the items moved; More says
// that its last batch was full.
func PromoteDue(q *queue.Queue, cfg PromoteConfig) (recruiter.Job, error) {
	cfg = cfg.withDefaults()
	return queueJob(q, "promote", (*queue.Queue).Promote, cfg.validate(), cfg.Batch, cfg.MaxBatches, cfg.Name, cfg.RedisTimeout)
}

// queueJob is the countJob of one of q's maintenance steps, once its
// config is checked (invalid is validate's result).
func queueJob(q *queue.Queue, kind string, step func(*queue.Queue, context.Context, int) (int, error),
	invalid error, batch, maxBatches int, name string, timeout time.Duration) (recruiter.Job, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	if invalid != nil {
		return nil, invalid
	}
	return &countJob{
		name:       cmp.Or(name, jobName(kind, q.Name())),
		batch:      batch,
		maxBatches: maxBatches,
		timeout:    timeout,
		step:       func(ctx context.Context, max int) (int, error) { return step(q, ctx, max) },
	}, nil
}
