package drain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/queue"
)

// The errors of package jobs, which exports these values: the Mux's job
// of package tasks returns them too.
var (
	ErrInvalidConfig   = errors.New("jobs: invalid config")
	ErrInvalidArgument = errors.New("jobs: invalid argument")
	ErrHandlerPanic    = errors.New("jobs: handler panicked")
)

// Batching has the fields of jobs.Batching, which converts to it, so
// that the drain and jobs' other jobs share one set of defaults and
// checks; jobs.Batching documents them.
type Batching struct {
	Batch        int
	MaxBatches   int
	Name         string
	RedisTimeout time.Duration
}

// Config has the fields of jobs.DrainConfig, which documents them.
type Config struct {
	Batching
	Concurrency int
}

// Defaults and bounds, which jobs' configs document.
const (
	batchDefault        = 100 // the drain's Batch
	RedisTimeoutDefault = 250 * time.Millisecond
	// RedisTimeoutMax bounds every RedisTimeout: past it, a slice could
	// hold its web server long after its budget.
	RedisTimeoutMax = 10 * time.Second
)

// concurrencyDefault suits handlers that wait on the network: 32 of 50 ms
// each keep a 50 ms slice busy, and waiting costs the process no CPU.
const (
	concurrencyDefault = 32
	concurrencyMax     = 1000
)

// WithDefaults fills the zero fields, with batch as the job's Batch.
func (b Batching) WithDefaults(batch int) Batching {
	b.Batch = cmp.Or(b.Batch, batch)
	b.RedisTimeout = cmp.Or(b.RedisTimeout, RedisTimeoutDefault)
	return b
}

// Validate checks the fields after defaults; an empty Name is derived.
func (b Batching) Validate() error {
	switch {
	case b.Batch < 1 || b.Batch > queue.BatchMax:
		return fmt.Errorf("%w: Batch %d is not in [1, %d]", ErrInvalidConfig, b.Batch, queue.BatchMax)
	case b.MaxBatches < 0:
		return fmt.Errorf("%w: MaxBatches %d is negative", ErrInvalidConfig, b.MaxBatches)
	case b.RedisTimeout < time.Millisecond || b.RedisTimeout > RedisTimeoutMax:
		return fmt.Errorf("%w: RedisTimeout %v is not in [1ms, %v]", ErrInvalidConfig, b.RedisTimeout, RedisTimeoutMax)
	case b.Name != "":
		return CheckName(b.Name)
	}
	return nil
}

// CheckName validates a configured job name as the recruiter does.
func CheckName(name string) error {
	if err := names.Check(name); err != nil {
		return fmt.Errorf("%w: Name: %v", ErrInvalidConfig, err)
	}
	return nil
}

// JobName is kind + "." + subject when that is a valid name. Otherwise the
// subject's invalid bytes become '_', it is cut to fit, and 8 hex digits
// of its FNV-1a hash are appended, so that distinct subjects keep distinct,
// stable names.
func JobName(kind, subject string) string {
	name := kind + "." + subject
	if names.Check(name) == nil {
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

// RedisContext bounds one Redis call by timeout rather than by ctx's
// deadline: the jobs decide before a call whether the budget fits it, and
// do not cut it once started.
func RedisContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// BatchLimit is how many batches a slice may make: MaxBatches, else as
// many as the deadline allows, else (no deadline: the job is not run by a
// recruiter) one, so that no slice is unbounded.
func BatchLimit(ctx context.Context, maxBatches int) int {
	if maxBatches > 0 {
		return maxBatches
	}
	if _, ok := ctx.Deadline(); ok {
		return math.MaxInt
	}
	return 1
}

// Remaining is the time left before ctx's deadline; ok is false without one.
func Remaining(ctx context.Context) (left time.Duration, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}
