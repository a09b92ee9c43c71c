package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
)

// Queue is a reliable work queue in Redis: at-least-once delivery through
// leases, retries with backoff, dead letters and stored results. It is safe
// for concurrent use; any number of processes may share one queue.
type Queue struct {
	cfg         Config
	st          *qstore.Store // its keys and scripts
	storeHandle               // st, for jobs' Drain and package tasks (qstore.Of)
}

type storeHandle = qstore.Handle

// New returns the queue called name, whose keys start with cfg.Prefix. The
// name is 1 to 128 of [A-Za-z0-9._-]. New makes no Redis call.
func New(rdb redis.UniversalClient, name string, cfg Config) (*Queue, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidArgument)
	}
	if err := names.Check(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidName, err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	noteRegistry(rdb, name, cfg)
	st := qstore.New(rdb, name, cfg.store())
	return &Queue{cfg: cfg, st: st, storeHandle: qstore.NewHandle(st)}, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.st.Name() }

// Config returns the queue's configuration, defaults applied.
func (q *Queue) Config() Config { return q.cfg }

// Enqueue adds an item at the tail of the queue and returns its id. For a
// delay, an attempt limit of the item's own or a unique key, see
// [Queue.EnqueueWith].
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return q.st.Enqueue(ctx, payload)
}

// EnqueueBatch adds items in order and returns their ids. Payloads are
// checked first: one that is empty or too large fails the call before
// anything is written. Larger batches are written in several script calls
// (at most [BatchMax] items each); if one fails, ids holds the items of
// the calls that succeeded, and the rest may or may not have been added.
func (q *Queue) EnqueueBatch(ctx context.Context, payloads [][]byte) (ids []string, err error) {
	return q.st.EnqueueBatch(ctx, payloads)
}

// Value returns the payload of an item that is pending, leased, delayed or
// dead; ErrNotFound once it was acked or purged, or if it never existed.
func (q *Queue) Value(ctx context.Context, id string) ([]byte, error) {
	return q.st.Value(ctx, id)
}

// Result returns the result an acked item was given, for ResultRetention
// after the Ack; ErrNotFound before the Ack or after the retention.
func (q *Queue) Result(ctx context.Context, id string) ([]byte, error) {
	return q.st.Result(ctx, id)
}

// Depth is a snapshot of what a queue holds, read in one atomic step.
type Depth struct {
	Pending int64 // waiting to be claimed
	Leased  int64 // claimed, not yet acked or nacked
	Expired int64 // leased past their deadline: the next claim (or jobs.TidyStale) hands them back
	Delayed int64 // waiting to be retried, or enqueued with a delay
	Due     int64 // delayed whose time has come: the next claim (or jobs.PromoteDue) makes them pending
	Dead    int64 // dead letters
	// Parked counts the pending items of task types at their limit, set
	// aside until it frees (see package tasks); Pending includes them.
	Parked int64
	// OldestPending is how long the item next in line has waited since it
	// last became pending (enqueued, promoted, recovered from an expired
	// lease or requeued); 0 when nothing is pending. The time of an
	// enqueue is the enqueuing process's clock (it is in the item's id),
	// the others are Redis's: a clock ahead of Redis's reads as a shorter
	// wait, never below 0.
	OldestPending time.Duration
}

// Depth reads the queue's counts in O(log n).
func (q *Queue) Depth(ctx context.Context) (Depth, error) {
	d, err := q.st.Depth(ctx)
	return Depth(d), err
}
