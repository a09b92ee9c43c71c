package tasks

import (
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/queue"
)

// EnqueueOption sets how [Task.Enqueue] or [Task.Call] adds one task:
// [Delay], [Attempts], [Unique]; [EnqueueChain] and [EnqueueFanOut] apply
// them to a whole chain or fan-out, [Task.EnqueueMany] its Delay and
// Attempts to each of its tasks. A nil EnqueueOption is ignored; of two options
// setting the same thing, the later wins. (Client and Mux options are
// [Option]s.)
type EnqueueOption interface{ applyEnqueue(*enqueueOptions) }

type enqueueOptions struct {
	queue.EnqueueOptions
	uniqueSet bool // Unique was given, even with an empty key
}

type enqueueOptionFunc func(*enqueueOptions)

func (f enqueueOptionFunc) applyEnqueue(o *enqueueOptions) { f(o) }

// Delay makes the task due no sooner than d after the enqueue, by
// Redis's clock ([queue.EnqueueOptions.Delay]). It runs when the queue's
// job ([Mux.Job]), whose claims promote the delayed items that are due,
// next runs after that. d is 0 (no delay) to a year; a negative or longer
// one fails the enqueue with [ErrInvalidArgument].
func Delay(d time.Duration) EnqueueOption {
	return enqueueOptionFunc(func(o *enqueueOptions) { o.Delay = d })
}

// Attempts gives the task n attempts in place of the queue's
// MaxAttempts ([queue.EnqueueOptions.MaxAttempts]): its handler failing,
// or its lease expiring, at the n-th dead-letters it. n is 1 to 1000, or
// 0 for the queue's.
func Attempts(n int) EnqueueOption {
	return enqueueOptionFunc(func(o *enqueueOptions) { o.MaxAttempts = n })
}

// Unique makes the enqueue add nothing while a task of the same type
// enqueued with the same key is pending, delayed or running, for at most
// ttl: [Task.Enqueue] returns that task's id, and [Task.Call] waits for
// its result. The key is freed when that task succeeds, dies or is
// purged, or when ttl has passed ([queue.EnqueueOptions.Unique]). Keys are
// per task type and per queue; key is 1 to 256 bytes, ttl above 0 and at
// most a year.
func Unique(key string, ttl time.Duration) EnqueueOption {
	return enqueueOptionFunc(func(o *enqueueOptions) {
		o.Unique, o.UniqueFor, o.uniqueSet = key, ttl, true
	})
}

// Priority puts the task in the lane of priority p on its queue, which
// [queue.Queue.SetPriorities] must have given a weight (as {"critical":
// 6, "default": 3, "low": 1}): the queue's one job takes tasks from each
// lane in proportion to its weight while several have tasks, never
// starving the lightest. The task keeps it through its retries; the
// next steps of a chain inherit it. "" or "default" is the default lane;
// a priority without a weight fails the enqueue with
// [ErrInvalidArgument]. A fan-out waits in the default lane: with
// Priority, [EnqueueFanOut] fails with [ErrInvalidArgument].
func Priority(p string) EnqueueOption {
	return enqueueOptionFunc(func(o *enqueueOptions) { o.Priority = p })
}

// queueOptions applies opts for a task of type typ.
func queueOptions(typ string, opts []EnqueueOption) (queue.EnqueueOptions, error) {
	if len(opts) == 0 {
		return queue.EnqueueOptions{}, nil // and o below not allocated
	}
	var o enqueueOptions
	applyOptions(&o, opts)
	if o.uniqueSet {
		switch {
		case o.Unique == "":
			return o.EnqueueOptions, fmt.Errorf("%w: enqueue %s: empty unique key", ErrInvalidArgument, typ)
		case len(o.Unique) > taskenv.UniqueKeyMax:
			return o.EnqueueOptions, fmt.Errorf("%w: enqueue %s: unique key of %d bytes is above %d", ErrInvalidArgument, typ, len(o.Unique), taskenv.UniqueKeyMax)
		}
		o.Unique = uniqueKey(typ, o.Unique)
	}
	return o.EnqueueOptions, nil
}

// uniqueKey is the queue's unique key of key for tasks of type typ.
func uniqueKey(typ, key string) string {
	return typ + ":" + key // type names have no ':'
}

// applyOptions applies opts to o, nil ones ignored.
func applyOptions(o *enqueueOptions, opts []EnqueueOption) {
	for _, opt := range opts {
		if opt != nil {
			opt.applyEnqueue(o)
		}
	}
}

// storeOptions are o for the queue's storage, which enqueues chains and
// fan-outs.
func storeOptions(o queue.EnqueueOptions) qstore.EnqueueOptions {
	return qstore.EnqueueOptions{Delay: o.Delay, MaxAttempts: o.MaxAttempts, Unique: o.Unique, UniqueFor: o.UniqueFor, Priority: o.Priority}
}
