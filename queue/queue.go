package queue

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base32"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/heal"
	"github.com/worksteal/worksteal/internal/names"
)

var (
	//go:embed enqueue.lua
	enqueueSource string
	enqueueScript = redis.NewScript(enqueueSource)

	//go:embed stats.lua
	statsSource string
	statsScript = redis.NewScript(statsSource)

	//go:embed result.lua
	resultSource string
	resultScript = redis.NewScript(resultSource)
)

// Queue is a reliable work queue in Redis: at-least-once delivery through
// leases, retries with backoff, dead letters and stored results. It is safe
// for concurrent use; any number of processes may share one queue.
type Queue struct {
	rdb  redis.UniversalClient
	name string
	cfg  Config
	k    keys
}

// keys are the Redis keys of one queue. They share the hash tag
// {prefix:q:name}, so every script runs on one Redis Cluster slot.
type keys struct {
	tag      string
	pending  string // list of ids; enqueue at the left, claim from the right
	leases   string // zset id → lease deadline (ms, Redis clock)
	values   string // hash id → payload, until acked or purged
	attempts string // hash id → claims so far, "attempt-claim" (the token) while leased
	ready    string // hash id → when it last became pending (ms)
	causes   string // hash id → why it last failed
	waiting  string // hash id → 1 while a Wait may be blocked on it
	delayed  string // zset id → when it is due (ms)
	dead     string // zset id → when it was dead-lettered (ms)
	seq      string // counter of claims
	results  string // hash id → "expiry ms:token:result" of an acked item
	expiring string // list of "expiry ms:id" of results, in expiry order
	limits   string // hash id → its own max attempts (EnqueueOptions.MaxAttempts)

	// Key lists of the scripts that take no per-id keys, built once.
	enqueueKeys, statsKeys []string
	enqueueWithKeys        []string
	claimKeys, releaseKeys []string
	tidyKeys, promoteKeys  []string
	requeueKeys, purgeKeys []string
	deadKeys, extendKeys   []string
	settleKeys, resultKeys []string
}

func newKeys(prefix, name string) keys {
	tag := "{" + prefix + ":q:" + name + "}"
	k := keys{
		tag:      tag,
		pending:  tag + ":pending",
		leases:   tag + ":leases",
		values:   tag + ":values",
		attempts: tag + ":attempts",
		ready:    tag + ":ready",
		causes:   tag + ":causes",
		waiting:  tag + ":waiting",
		delayed:  tag + ":delayed",
		dead:     tag + ":dead",
		seq:      tag + ":seq",
		results:  tag + ":results",
		expiring: tag + ":expiring",
		limits:   tag + ":limits",
	}
	k.enqueueKeys = []string{k.pending, k.values, k.ready}
	k.enqueueWithKeys = []string{k.pending, k.values, k.ready, k.delayed, k.limits, k.dead}
	k.statsKeys = []string{k.pending, k.leases, k.delayed, k.dead, k.ready}
	k.claimKeys = []string{k.pending, k.leases, k.values, k.attempts, k.seq, k.delayed, k.dead, k.causes, k.limits, k.ready, k.results, k.expiring}
	k.releaseKeys = []string{k.leases, k.attempts, k.pending}
	k.extendKeys = []string{k.leases, k.attempts}
	k.settleKeys = []string{k.leases, k.values, k.attempts, k.ready, k.causes, k.delayed, k.dead, k.waiting, k.results, k.expiring, k.limits, k.pending}
	k.tidyKeys = []string{k.leases, k.attempts, k.pending, k.dead, k.causes, k.ready, k.results, k.expiring, k.limits}
	k.promoteKeys = []string{k.delayed, k.pending, k.ready}
	k.requeueKeys = []string{k.dead, k.pending, k.attempts, k.causes, k.ready}
	k.purgeKeys = []string{k.dead, k.values, k.attempts, k.causes, k.ready, k.waiting, k.limits}
	k.deadKeys = []string{k.dead, k.causes, k.attempts}
	k.resultKeys = []string{k.results}
	return k
}

// unique is the key of the lock a unique key takes (see EnqueueWith): a
// hash whose field "id" is the item holding it, expiring with UniqueFor.
func (k keys) unique(key string) string { return k.tag + ":unique:" + key }

// chain is the key of a chain's record (see Chain): a hash of its
// current step's id, that step's place and the chain's steps.
func (k keys) chain(id string) string { return k.tag + ":chain:" + id }

// join is the key of a join's record (see EnqueueJoin): a hash of how
// many of its children are left to ack and how many it has.
func (k keys) join(id string) string { return k.tag + ":join:" + id }

// notify is the key of the list that wakes an item's waiters (see Wait).
func (k keys) notify(id string) string { return k.tag + ":notify:" + id }

// encodingPin is stored once in each hash and sorted set that the scripts
// fill and empty by whole batches (values, ready, attempts, results as the
// field "", which no id can be; leases as a member scored +inf, which no
// lease can reach). Redis keeps a small hash or sorted set as a listpack,
// in which every lookup scans the whole key: with a batch of 100 going in
// and out, that was about half of a claim's and a settle's Redis time. A
// value longer than hash-max-listpack-value and zset-max-listpack-value
// (64 by default) moves the key to Redis's hash table and skiplist
// encodings, for good: O(1) and O(log n) per item whatever the batch.
const encodingPin = "worksteal: this entry keeps the key in Redis's hashtable encoding (see package queue)"

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
	return &Queue{rdb: rdb, name: name, cfg: cfg, k: newKeys(cfg.Prefix, name)}, nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// Config returns the queue's configuration, defaults applied.
func (q *Queue) Config() Config { return q.cfg }

// idEncoding writes ids in lower-case base32 without padding: 26 bytes.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns 128 random bits. Ids are made here rather than by a Redis
// counter so that a retried Enqueue (its reply lost) names the same item
// and adds nothing twice.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return idEncoding.EncodeToString(b[:])
}

func (q *Queue) checkPayload(what string, p []byte) error {
	if len(p) > q.cfg.MaxPayload {
		return fmt.Errorf("%w: %s of %d bytes is above MaxPayload %d", ErrPayloadTooLarge, what, len(p), q.cfg.MaxPayload)
	}
	return nil
}

// Enqueue adds an item at the tail of the queue and returns its id. For a
// delay, an attempt limit of the item's own or a unique key, see
// [Queue.EnqueueWith].
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	ids, err := q.EnqueueBatch(ctx, [][]byte{payload})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// enqueueChunkBytes bounds the payload bytes of one script call.
const enqueueChunkBytes = 4 << 20

// EnqueueBatch adds items in order and returns their ids. Payloads are
// checked first: one that is empty or too large fails the call before
// anything is written. Larger batches are written in several script calls
// (at most [BatchMax] items each); if one fails, ids holds the items of
// the calls that succeeded, and the rest may or may not have been added.
func (q *Queue) EnqueueBatch(ctx context.Context, payloads [][]byte) (ids []string, err error) {
	for i, p := range payloads {
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: payload %d", ErrEmptyPayload, i)
		}
		if err := q.checkPayload(fmt.Sprintf("payload %d", i), p); err != nil {
			return nil, err
		}
	}
	ids = make([]string, 0, len(payloads))
	for start := 0; start < len(payloads); {
		end, size := start, 0
		for end < len(payloads) && end-start < BatchMax && (end == start || size+len(payloads[end]) <= enqueueChunkBytes) {
			size += len(payloads[end])
			end++
		}
		args := make([]any, 0, 1+2*(end-start))
		args = append(args, encodingPin)
		chunk := make([]string, 0, end-start)
		for _, p := range payloads[start:end] {
			id := newID()
			chunk = append(chunk, id)
			args = append(args, id, p)
		}
		if err := enqueueScript.Run(ctx, q.rdb, q.k.enqueueKeys, args...).Err(); err != nil {
			return ids, q.wrap("enqueue", err)
		}
		ids = append(ids, chunk...)
		start = end
	}
	return ids, nil
}

// Value returns the payload of an item that is pending, leased, delayed or
// dead; ErrNotFound once it was acked or purged, or if it never existed.
func (q *Queue) Value(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	v, err := q.rdb.HGet(ctx, q.k.values, id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: no value for %s", ErrNotFound, id)
	}
	return v, q.wrap("value", err)
}

// Result returns the result an acked item was given, for ResultRetention
// after the Ack; ErrNotFound before the Ack or after the retention.
func (q *Queue) Result(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	v, err := resultScript.Run(ctx, q.rdb, q.k.resultKeys, id).Text()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: no result for %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, q.wrap("result", err)
	}
	return []byte(v), nil
}

// Depth is a snapshot of what a queue holds, read in one atomic step.
type Depth struct {
	Pending int64 // waiting to be claimed
	Leased  int64 // claimed, not yet acked or nacked
	Expired int64 // leased past their deadline: the next claim (or Tidy) hands them back
	Delayed int64 // waiting to be retried, or enqueued with a delay
	Due     int64 // delayed whose time has come: the next claim (or Promote) makes them pending
	Dead    int64 // dead letters
	// OldestPending is how long the item next in line has waited since it
	// last became pending (enqueued, promoted, recovered from an expired
	// lease or requeued); 0 when nothing is pending.
	OldestPending time.Duration
}

// Depth reads the queue's counts in O(log n).
func (q *Queue) Depth(ctx context.Context) (Depth, error) {
	r, err := statsScript.Run(ctx, q.rdb, q.k.statsKeys, encodingPin).Int64Slice()
	if err != nil {
		return Depth{}, q.wrap("stats", err)
	}
	if len(r) != 7 {
		return Depth{}, q.wrap("stats", fmt.Errorf("%w: %d values", errUnexpectedScript, len(r)))
	}
	return Depth{
		Pending: r[0], Leased: r[1], Expired: r[2], Delayed: r[3], Due: r[4], Dead: r[5],
		OldestPending: time.Duration(max(r[6], 0)) * time.Millisecond,
	}, nil
}

// wrap names the queue and the operation in err; nil stays nil.
func (q *Queue) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	heal.Notice(q.rdb, err) // a ClusterClient whose master died finds its replica
	return fmt.Errorf("queue %s: %s: %w", q.name, op, err)
}
