package jobs

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/worksqueue"
	"github.com/worksteal/worksteal/recruiter"
)

// Batching is how a job's slices work in batches. Every job's config
// embeds it; zero fields take that job's defaults, documented on its
// config, and [BatchJob] takes it for a job of one's own.
type Batching struct {
	// Batch is the most entries one batch handles (for the built-in jobs,
	// one script call), from 1 to 1,000 ([queue.BatchMax]), so that one
	// call stays around a millisecond of work. Zero: the job's default,
	// documented on its config.
	Batch int
	// MaxBatches bounds the batches of one slice. Zero: as many as its
	// budget allows (one, for a slice run without a deadline).
	MaxBatches int
	// Name overrides the job's name, which is derived from its queue or
	// key by default. Two jobs with the same name share one lock. Like any
	// job name: 1 to 128 bytes of [A-Za-z0-9._-].
	Name string
	// RedisTimeout bounds each Redis call of a batch. A call is not cut at
	// the slice's deadline, as its work would be done in Redis all the
	// same but go uncounted; rather, a slice starts no batch that the
	// budget left does not fit. Zero: 250ms; at most 10s.
	RedisTimeout time.Duration
}

// Defaults of Batching's Batch, per job; Drain's is package drain's.
const (
	batchJobBatchDefault = 100
	evictBatchDefault    = 500
	promoteBatchDefault  = 500
	tidyBatchDefault     = 500
)

// headroom is how many times the slowest batch's duration must remain of
// the budget for another batch to start: batches vary (a GC pause, another
// client's script), and a slice that returns late counts as a timeout.
const headroom = 2

// withDefaults fills the zero fields, with batch as the job's Batch, as
// package drain does for Drain: drain.Batching has the same fields.
func (b Batching) withDefaults(batch int) Batching {
	return Batching(drain.Batching(b).WithDefaults(batch))
}

// validate checks the fields after defaults; an empty Name is derived.
func (b Batching) validate() error { return drain.Batching(b).Validate() }

// BatchJob returns a job whose slices call step in batches: step handles
// up to max entries (cfg.Batch) and returns how many it handled, as
// [github.com/worksteal/worksteal/exphash.Hash.Evict] and the steps of
// [TidyStale] and [PromoteDue] do. The job is called name, unless
// cfg.Name overrides it; a zero cfg.Batch is 100.
//
// A slice makes batches until one is not full (nothing is left), or
// cfg.MaxBatches are done, or the budget left (ctx's deadline) is below
// twice its slowest batch so far; without a deadline and MaxBatches, it
// makes one. Each step gets a context bounded by cfg.RedisTimeout rather
// than by the slice's deadline, so that a batch once started is not cut
// and its count not lost. A slice's Items sums the counts, and More says
// that its last batch was full, so that the recruiter lets the next
// recruit continue at once. A step's error ends the slice, reported with
// More (what is left is unknown) and wrapped with the job's name.
func BatchJob(name string, cfg Batching, step func(ctx context.Context, max int) (int, error)) (recruiter.Job, error) {
	if step == nil {
		return nil, fmt.Errorf("%w: nil step", ErrInvalidArgument)
	}
	return batchJob(name, cfg.withDefaults(batchJobBatchDefault), step)
}

// batchJob is BatchJob once cfg has the job's defaults.
func batchJob(name string, cfg Batching, step func(ctx context.Context, max int) (int, error)) (recruiter.Job, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		if err := names.Check(name); err != nil {
			return nil, fmt.Errorf("%w: name: %v", ErrInvalidArgument, err)
		}
	}
	return &batchedJob{name: cmp.Or(cfg.Name, name), cfg: cfg, step: step}, nil
}

// batchedJob is the job of BatchJob, and of tidy, promote and evict, whose
// batch is one script call.
type batchedJob struct {
	queueMark // the queue of tidy and promote, for the recruiter's check of its prefix
	name      string
	cfg       Batching
	step      func(ctx context.Context, max int) (int, error)
}

type queueMark = worksqueue.Mark

func (j *batchedJob) Name() string { return j.name }

// Run makes batches until one is not full (nothing left), the batch limit
// is reached, or the budget left is below twice the slowest batch so far.
// More reports that the last batch was full.
func (j *batchedJob) Run(ctx context.Context) (recruiter.Report, error) {
	var rep recruiter.Report
	limit := drain.BatchLimit(ctx, j.cfg.MaxBatches)
	var slowest time.Duration
	for b := 0; b < limit; b++ {
		if left, ok := drain.Remaining(ctx); b > 0 && ok && left < headroom*slowest {
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
		rep.More = n >= j.cfg.Batch
		if !rep.More {
			break
		}
	}
	return rep, nil
}

func (j *batchedJob) runStep(ctx context.Context) (int, error) {
	rctx, cancel := drain.RedisContext(ctx, j.cfg.RedisTimeout)
	defer cancel()
	return j.step(rctx, j.cfg.Batch)
}
