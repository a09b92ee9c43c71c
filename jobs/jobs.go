package jobs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Errors of this package. Those about a config or an argument wrap a
// message naming the field or argument.
var (
	ErrInvalidConfig   = errors.New("jobs: invalid config")
	ErrInvalidArgument = errors.New("jobs: invalid argument")
	ErrHandlerPanic    = errors.New("jobs: handler panicked")
	ErrNotFound        = errors.New("jobs: not found")
)

// Defaults applied to zero fields of the configs.
const (
	DrainBatchDefault     = 100
	EvictBatchDefault     = 500
	EvictScoreUnitDefault = time.Millisecond
	PromoteBatchDefault   = 500
	RedisTimeoutDefault   = 250 * time.Millisecond
	TidyBatchDefault      = 500
)

// redisTimeoutMax bounds every RedisTimeout: past it, a slice could hold
// its web server long after its budget.
const redisTimeoutMax = 10 * time.Second

// BatchMax bounds every Batch field: it is [queue.BatchMax], so that one
// script call stays around a millisecond of work whatever the job.
const BatchMax = queue.BatchMax

// headroom is how many times the slowest batch's duration must remain of
// the budget for another batch to start: batches vary (a GC pause, another
// client's script), and a slice that returns late counts as a timeout.
const headroom = 2

// validateCommon validates the fields that every config has, after
// defaults: Batch, MaxBatches, Name (empty: derived) and RedisTimeout.
func validateCommon(batch, maxBatches int, name string, redisTimeout time.Duration) error {
	switch {
	case batch < 1 || batch > BatchMax:
		return fmt.Errorf("%w: Batch %d is not in [1, %d]", ErrInvalidConfig, batch, BatchMax)
	case maxBatches < 0:
		return fmt.Errorf("%w: MaxBatches %d is negative", ErrInvalidConfig, maxBatches)
	case redisTimeout < time.Millisecond || redisTimeout > redisTimeoutMax:
		return fmt.Errorf("%w: RedisTimeout %v is not in [1ms, %v]", ErrInvalidConfig, redisTimeout, redisTimeoutMax)
	case name != "":
		return checkName(name)
	}
	return nil
}

// redisContext bounds one Redis call by timeout rather than by ctx's
// deadline: the jobs decide before a call whether the budget fits it, and
// do not cut it once started.
func redisContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// batchLimit is how many batches a slice may make: MaxBatches, else as
// many as the deadline allows, else (no deadline: the job is not run by a
// recruiter) one, so that no slice is unbounded.
func batchLimit(ctx context.Context, maxBatches int) int {
	if maxBatches > 0 {
		return maxBatches
	}
	if _, ok := ctx.Deadline(); ok {
		return math.MaxInt
	}
	return 1
}

// remaining is the time left before ctx's deadline; ok is false without one.
func remaining(ctx context.Context) (left time.Duration, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}

// countJob is a job whose batch is one script call that handles up to n
// entries and returns how many it handled: tidy, promote, evict.
type countJob struct {
	name       string
	batch      int
	maxBatches int
	timeout    time.Duration
	step       func(ctx context.Context, n int) (int, error)
}

func (j *countJob) Name() string { return j.name }

// Run makes batches until one is not full (nothing left), the batch limit
// is reached, or the budget left is below twice the slowest batch so far.
// More reports that the last batch was full.
func (j *countJob) Run(ctx context.Context) (recruiter.Report, error) {
	var rep recruiter.Report
	limit := batchLimit(ctx, j.maxBatches)
	var slowest time.Duration
	for b := 0; b < limit; b++ {
		if left, ok := remaining(ctx); b > 0 && ok && left < headroom*slowest {
			break // the budget is spent, or nearly: not an error
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("jobs: %s: %w", j.name, err)
		}
		began := time.Now()
		n, err := j.runStep(ctx)
		slowest = max(slowest, time.Since(began))
		rep.Items += n
		if err != nil {
			rep.More = true // unknown: the next slice finds out
			return rep, fmt.Errorf("jobs: %s: %w", j.name, err)
		}
		rep.More = n >= j.batch
		if !rep.More {
			break
		}
	}
	return rep, nil
}

func (j *countJob) runStep(ctx context.Context) (int, error) {
	rctx, cancel := redisContext(ctx, j.timeout)
	defer cancel()
	return j.step(rctx, j.batch)
}

// checkName validates a configured job name as the recruiter does.
func checkName(name string) error {
	if err := names.Check(name); err != nil {
		return fmt.Errorf("%w: Name: %v", ErrInvalidConfig, err)
	}
	return nil
}

// jobName is kind + "." + subject when that is a valid name. Otherwise the
// subject's invalid bytes become '_', it is cut to fit, and 8 hex digits
// of its FNV-1a hash are appended, so that distinct subjects keep distinct,
// stable names.
func jobName(kind, subject string) string {
	name := kind + "." + subject
	if checkName(name) == nil {
		return name
	}
	clean := []byte(subject)
	for i, c := range clean {
		if names.Check(string(c)) != nil { // one byte: no allocation
			clean[i] = '_'
		}
	}
	h := fnv.New32a()
	h.Write([]byte(subject))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	if room := names.MaxLen - len(kind) - 1 - len(suffix); len(clean) > room {
		clean = clean[:room]
	}
	return kind + "." + string(clean) + suffix
}
