package qstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// Two scripts of one source: the unique key's functions only where
	// they are called, since Redis makes a script's functions anew on
	// every call (a tenth of a delayed enqueue's Redis time).
	enqueueWithScript   = newScriptWithout("enqueuewith", "unique")
	enqueueUniqueScript = newScript("enqueuewith")
	// The usual item (no chain or trace context of its own), on a
	// script that makes only the functions it calls and is sent only
	// what the item needs (BENCHMARKS.md, issue 41); a delayed one,
	// which no lane receives, without lanes.lua's functions.
	enqueueOneScript        = newScriptOfCalls("enqueueone", "")
	enqueueOneDelayedScript = newScriptOfCalls("enqueueone", "lanes")
)

// Bounds of [EnqueueOptions]; each field's doc says its own.
const (
	delayMax       = 365 * 24 * time.Hour
	maxAttemptsMax = 1000
	uniqueMax      = 512
	uniqueForMax   = 365 * 24 * time.Hour
)

// EnqueueOptions are queue.EnqueueOptions (documented there), and Chain.
type EnqueueOptions struct {
	Delay       time.Duration
	MaxAttempts int
	Unique      string
	UniqueFor   time.Duration
	// Chain, when not zero, makes the item a step of a chain, whose
	// record [Store.Chain] reads: the first usually, and each next one is
	// enqueued by the ack of the one before ([FollowUp]). An empty
	// Chain.ID names the chain after the item: its id is the chain's. The
	// record is not written when Unique finds a duplicate.
	Chain ChainStep
	// Priority is queue.EnqueueOptions.Priority.
	Priority string
	// Trace, when not empty, is the trace context of the enqueue (package
	// tasks' W3C traceparent), which claims return with the item
	// ([Item].Trace): see tracectx.go. It does not count against
	// MaxPayload.
	Trace string
}

func (o EnqueueOptions) validate() error {
	switch {
	case o.Delay < 0 || o.Delay > delayMax:
		return fmt.Errorf("%w: Delay %v is not in [0, %v]", ErrInvalidArgument, o.Delay, delayMax)
	case o.MaxAttempts < 0 || o.MaxAttempts > maxAttemptsMax:
		return fmt.Errorf("%w: MaxAttempts %d is not in [0, %d]", ErrInvalidArgument, o.MaxAttempts, maxAttemptsMax)
	case len(o.Unique) > uniqueMax:
		return fmt.Errorf("%w: Unique key of %d bytes is above %d", ErrInvalidArgument, len(o.Unique), uniqueMax)
	case o.Unique == "" && o.UniqueFor != 0:
		return fmt.Errorf("%w: UniqueFor %v without a Unique key", ErrInvalidArgument, o.UniqueFor)
	case o.Unique != "" && (o.UniqueFor <= 0 || o.UniqueFor > uniqueForMax):
		return fmt.Errorf("%w: UniqueFor %v of Unique key %.40q is not in (0, %v]", ErrInvalidArgument, o.UniqueFor, o.Unique, uniqueForMax)
	}
	if err := checkPriority(o.Priority); err != nil {
		return err
	}
	if err := checkTrace("enqueue", o.Trace); err != nil {
		return err
	}
	if !o.Chain.isZero() {
		return o.Chain.validate(true)
	}
	return nil
}

// ceilMillis is d in whole ms, rounded up: a delay or a lifetime is never
// cut short.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Check returns the error that EnqueueWith of payload with opts returns
// before any call: an empty payload, one above MaxPayload, an option out
// of its bounds; nil when EnqueueWith would send it.
func (q *Store) Check(payload []byte, opts EnqueueOptions) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: payload", ErrEmptyPayload)
	}
	if err := q.checkPayload("payload", payload); err != nil {
		return err
	}
	return opts.validate()
}

// EnqueueWith is queue.Queue.EnqueueWith, and writes a chain's record
// when opts.Chain is not zero, in the same script call.
func (q *Store) EnqueueWith(ctx context.Context, payload []byte, opts EnqueueOptions) (id string, duplicate bool, err error) {
	if err := q.Check(payload, opts); err != nil {
		return "", false, err
	}
	id = newID()
	script, keys, args := q.enqueueWithCall(id, payload, opts)
	reply, err := script.Run(ctx, q.rdb, keys, args...).Result()
	if err != nil {
		return "", false, q.wrap("enqueue", priorityErr(err, opts.Priority))
	}
	switch r := reply.(type) {
	case int64: // 1: added; 0: added before, by this very call resent
		if opts.Delay <= 0 {
			q.bell.Ring()
		}
		return id, false, nil
	case string: // the unique key's holder
		if r == "" {
			return "", false, q.wrap("enqueue", fmt.Errorf("%w: no id", errUnexpectedScript))
		}
		return r, true, nil
	default:
		return "", false, q.wrap("enqueue", fmt.Errorf("%w: %T", errUnexpectedScript, reply))
	}
}

// enqueueWithCall is the script call, its keys and its arguments that
// enqueue payload as id with opts.
func (q *Store) enqueueWithCall(id string, payload []byte, opts EnqueueOptions) (script *redis.Script, keys []string, args []any) {
	if opts.Chain.isZero() && opts.Trace == "" {
		keys, args = q.enqueueOneCall(id, payload, opts)
		if opts.Delay > 0 {
			return enqueueOneDelayedScript, keys, args
		}
		return enqueueOneScript, keys, args
	}
	script, keys = enqueueWithScript, q.k.enqueueWithKeys
	if opts.Unique != "" {
		script, keys = enqueueUniqueScript, append(keys[:len(keys):len(keys)], q.k.unique(opts.Unique))
	}
	step, steps := "", 0
	if !opts.Chain.isZero() {
		chain := cmp.Or(opts.Chain.ID, id)
		keys = append(keys[:len(keys):len(keys)], q.k.chain(chain))
		step, steps = strconv.Itoa(opts.Chain.Step), opts.Chain.Steps
	}
	args = []any{encodingPin, id, payload, ceilMillis(opts.Delay), opts.MaxAttempts, ceilMillis(opts.UniqueFor)}
	// The script takes a chain's and a priority's arguments as '' or 0
	// when they are left out: fewer to send and for Redis to read.
	if step != "" || opts.Priority != "" || opts.Trace != "" {
		args = append(args, step, steps, q.cfg.ResultRetention.Milliseconds())
	}
	if opts.Priority != "" || opts.Trace != "" {
		args = append(args, opts.Priority)
	}
	if opts.Trace != "" {
		args = append(args, opts.Trace)
	}
	return script, keys, args
}

// enqueueOneCall is enqueueone.lua's keys and arguments for payload as id
// with opts, which has no chain or trace context: the options left at
// their zero values last are not sent (go-redis allocates for each key
// and argument, and Redis parses each).
func (q *Store) enqueueOneCall(id string, payload []byte, opts EnqueueOptions) (keys []string, args []any) {
	keys = q.k.enqueueOneKeys
	if opts.Delay > 0 {
		keys = q.k.enqueueOneDelayedKeys
	}
	if opts.Unique != "" {
		keys = append(keys[:len(keys):len(keys)], q.k.unique(opts.Unique))
	}
	delay, lifetime := ceilMillis(opts.Delay), ceilMillis(opts.UniqueFor)
	all := [...]any{id, payload, delay, lifetime, opts.MaxAttempts, opts.Priority}
	n := 2
	switch {
	case opts.Priority != "":
		n = 6
	case opts.MaxAttempts != 0:
		n = 5
	case lifetime != 0:
		n = 4
	case delay != 0:
		n = 3
	}
	return keys, slices.Clone(all[:n])
}
