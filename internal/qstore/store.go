package qstore

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/wakeup"

	"github.com/worksteal/worksteal/internal/heal"
)

var (
	enqueueScript = newScript("enqueue")
	depthScript   = newScript("depth")
	resultScript  = newScript("result")
)

// Store is the storage of one queue: its keys and the scripts that move
// its items. It is safe for concurrent use; any number of processes may
// share one queue.
type Store struct {
	rdb  redis.UniversalClient
	name string
	cfg  Config
	k    keys
	bell *wakeup.Bell // rung when an item becomes pending here
	// onScriptDead gets the dead letters the scripts make (scriptdead.go).
	onScriptDead atomic.Pointer[func(context.Context, ScriptDead)]
}

// Of returns the store of q, a *queue.Queue: how jobs' Drain and package
// tasks reach the storage of the queue they are given. Package queue may
// not export its store, and this package may not import queue; a Queue
// embeds a [Handle], whose unexported method only this package calls.
func Of(q interface{ store() *Store }) *Store { return q.store() }

// Handle holds a queue's store. queue.Queue embeds it under an unexported
// name, so that no user reaches it.
type Handle struct{ st *Store }

// NewHandle returns the handle of st.
func NewHandle(st *Store) Handle { return Handle{st} }

func (h Handle) store() *Store { return h.st }

// keys are the Redis keys of one queue. They share the hash tag
// {prefix:q:name}, so every script runs on one Redis Cluster slot.
type keys struct {
	tag      string
	pending  string // list of ids; enqueue at the left, claim from the right
	leases   string // zset id → lease deadline (ms, Redis clock)
	values   string // hash id → payload, until acked or purged
	attempts string // hash id → claims so far, "attempt-claim" (the token) while leased
	ready    string // hash id → when it last became pending (ms), if not when its id was made
	causes   string // hash id → why it last failed
	waiting  string // hash id → 1 while a Wait may be blocked on it
	delayed  string // zset id → when it is due (ms)
	dead     string // zset id → when it was dead-lettered (ms)
	seq      string // counter of claims
	results  string // hash id → "expiry ms:token:result" of an acked item
	expiring string // list of "expiry ms:id" of results, in expiry order
	limits   string // hash id → its own max attempts (EnqueueOptions.MaxAttempts)
	traced   string // exists while an item may have a trace context (tracectx.go)

	// Cancels (cancel.go).
	canceled   string // zset id → until when its canceled record is kept (ms)
	tombstones string // set of canceled ids still in a pending or set-aside list

	// Task types' limits (limits.go). The per-type keys, TAG:running:TYPE
	// (zset id → lease deadline), TAG:starts:TYPE (zset "id:token" →
	// claim ms) and TAG:parked:TYPE (list of ids set aside, the oldest at
	// the right), are named by the scripts: see types.lua.
	typeLimits string // hash type → "running rate per-ms"
	holding    string // hash id → type, of leased items of limited types
	parked     string // set of the types with items set aside

	// Priorities (priorities.go). A lane, the list of the items of one
	// priority, is pending's name, ':' and the priority (the default lane
	// is pending itself), as the scripts name it: see lanes.lua.
	weights string // hash priority → weight
	lanes   string // hash id → priority, of items not in the default lane
	swrr    string // hash priority → credit in the claims' draw

	// Key lists of the scripts that take no per-id keys, built once.
	enqueueKeys, depthKeys []string
	enqueueWithKeys        []string
	enqueueOneKeys         []string // enqueueone.lua's without a unique key
	enqueueOneDelayedKeys  []string // and with a delay
	claimKeys, releaseKeys []string
	tidyKeys, promoteKeys  []string
	requeueKeys, purgeKeys []string
	extendKeys             []string
	settleKeys, resultKeys []string
	cancelKeys             []string
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
		traced:   tag + ":traced",

		canceled:   tag + ":canceled",
		tombstones: tag + ":tombstones",

		typeLimits: tag + ":typelimits",
		holding:    tag + ":holding",
		parked:     tag + ":parked",

		weights: tag + ":weights",
		lanes:   tag + ":lanes",
		swrr:    tag + ":swrr",
	}
	k.enqueueKeys = []string{k.pending, k.values, k.delayed, k.limits}
	k.enqueueWithKeys = []string{k.pending, k.values, k.delayed, k.limits, k.dead}
	k.enqueueOneKeys = []string{k.values, k.pending}
	k.enqueueOneDelayedKeys = []string{k.values, k.delayed}
	k.depthKeys = []string{k.pending, k.leases, k.delayed, k.dead, k.ready, k.parked, k.weights}
	k.claimKeys = []string{k.pending, k.leases, k.values, k.attempts, k.seq, k.delayed, k.dead, k.causes, k.limits, k.ready, k.results, k.expiring}
	k.releaseKeys = []string{k.leases, k.attempts, k.pending}
	k.extendKeys = []string{k.leases, k.attempts}
	k.settleKeys = []string{k.leases, k.values, k.attempts, k.ready, k.causes, k.delayed, k.dead, k.waiting, k.results, k.expiring, k.limits, k.pending}
	k.tidyKeys = []string{k.leases, k.attempts, k.pending, k.dead, k.causes, k.ready, k.results, k.expiring, k.limits, k.values}
	k.promoteKeys = []string{k.delayed, k.pending, k.ready}
	k.requeueKeys = []string{k.dead, k.pending, k.attempts, k.causes, k.ready}
	k.purgeKeys = append([]string{k.dead}, k.itemHashes()...)
	k.resultKeys = []string{k.results}
	k.cancelKeys = []string{k.leases, k.values, k.attempts, k.ready, k.causes, k.delayed, k.dead, k.waiting, k.results, k.limits, k.canceled, k.tombstones}
	return k
}

// itemHashes are the hashes that keep fields of an item by its id, but
// for an acked item's result: a purge deletes its field from each of them
// (purge.lua takes them all, whatever their number). A new hash of that
// kind goes here, so that no purge leaves its fields behind.
func (k keys) itemHashes() []string {
	return []string{k.values, k.attempts, k.causes, k.ready, k.waiting, k.limits, k.lanes}
}

// unique is the key of the lock a unique key takes (see EnqueueWith): a
// hash whose field "id" is the item holding it, expiring with UniqueFor.
func (k keys) unique(key string) string { return k.tag + ":unique:" + key }

// chain is the key of a chain's record (see Store.Chain): a hash of its
// current step's id, that step's place and the chain's steps.
func (k keys) chain(id string) string { return k.tag + ":chain:" + id }

// join is the key of a join's record (see Store.EnqueueJoin): a hash of how
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

// New returns the store of the queue called name, with cfg, whose
// defaults package queue has applied and checked, as it has checked the
// name. New makes no Redis call.
func New(rdb redis.UniversalClient, name string, cfg Config) *Store {
	k := newKeys(cfg.Prefix, name)
	return &Store{rdb: rdb, name: name, cfg: cfg, k: k, bell: wakeup.For(k.tag)}
}

// Bell is the queue's bell, which this process's enqueues ring.
func (q *Store) Bell() *wakeup.Bell { return q.bell }

// Name returns the queue's name.
func (q *Store) Name() string { return q.name }

// Config returns the queue's configuration.
func (q *Store) Config() Config { return q.cfg }

// idEncoding writes ids in lower-case base32 without padding: 26 bytes.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns 128 bits: this process's clock in ms (48 bits, big-endian)
// and 80 random ones. Ids are made here rather than by a Redis counter so
// that a retried Enqueue (its reply lost) names the same item and adds
// nothing twice. The time is the item's ready time until it has another
// (readyat.lua): so an enqueue writes none, one command and a quarter of
// its Redis time less.
func newID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // never fails (crypto/rand since Go 1.24)
	return idEncoding.EncodeToString(b[:])
}

func (q *Store) checkPayload(what string, p []byte) error {
	if len(p) > q.cfg.MaxPayload {
		return fmt.Errorf("%w: %s of %d bytes is above MaxPayload %d", ErrPayloadTooLarge, what, len(p), q.cfg.MaxPayload)
	}
	return nil
}

// Enqueue is queue.Queue.Enqueue: [Store.EnqueueWith] without options,
// whose script spends less of Redis's time on one item than the batch's.
func (q *Store) Enqueue(ctx context.Context, payload []byte) (string, error) {
	id, _, err := q.EnqueueWith(ctx, payload, EnqueueOptions{})
	return id, err
}

// enqueueChunkBytes bounds the payload bytes of one script call.
const enqueueChunkBytes = 4 << 20

// EnqueueBatch is queue.Queue.EnqueueBatch: [Store.EnqueueBatchWith]
// without options.
func (q *Store) EnqueueBatch(ctx context.Context, payloads [][]byte) (ids []string, err error) {
	return q.EnqueueBatchWith(ctx, payloads, EnqueueOptions{})
}

// EnqueueBatchWith adds items in order, each with opts' Delay and
// MaxAttempts, and returns their ids. Payloads and opts are checked
// first, then written in script calls of at most [BatchMax] items and
// enqueueChunkBytes: a delay makes every item of one call due at once.
// A Unique key or a Chain names one item, so opts with either fail with
// ErrInvalidArgument. If a call fails, ids holds the items of the calls
// that succeeded.
func (q *Store) EnqueueBatchWith(ctx context.Context, payloads [][]byte, opts EnqueueOptions) (ids []string, err error) {
	if opts.Unique != "" || opts.UniqueFor != 0 || !opts.Chain.isZero() {
		return nil, fmt.Errorf("%w: a batch's items cannot share a unique key or a chain", ErrInvalidArgument)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	for i, p := range payloads {
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: payload %d", ErrEmptyPayload, i)
		}
		if err := q.checkPayload(fmt.Sprintf("payload %d", i), p); err != nil {
			return nil, err
		}
	}
	delay := ceilMillis(opts.Delay)
	ids = make([]string, 0, len(payloads))
	for start := 0; start < len(payloads); {
		end, size := start, 0
		for end < len(payloads) && end-start < BatchMax && (end == start || size+len(payloads[end]) <= enqueueChunkBytes) {
			size += len(payloads[end])
			end++
		}
		args := make([]any, 0, 5+2*(end-start))
		args = append(args, encodingPin, delay, opts.MaxAttempts, opts.Priority)
		keys := q.k.enqueueKeys
		if opts.Trace != "" {
			keys = append(keys[:len(keys):len(keys)], q.k.traced)
			args = append(args, opts.Trace)
		}
		chunk := make([]string, 0, end-start)
		for _, p := range payloads[start:end] {
			id := newID()
			chunk = append(chunk, id)
			args = append(args, id, p)
		}
		if err := enqueueScript.Run(ctx, q.rdb, keys, args...).Err(); err != nil {
			return ids, q.wrap("enqueue", priorityErr(err, opts.Priority))
		}
		ids = append(ids, chunk...)
		start = end
		if delay == 0 {
			q.bell.Ring()
		}
	}
	return ids, nil
}

// Value is queue.Queue.Value.
func (q *Store) Value(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	v, err := q.rdb.HGet(ctx, q.k.values, id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: no value for %s", ErrNotFound, id)
	}
	return v, q.wrap("value", err)
}

// Result is queue.Queue.Result.
func (q *Store) Result(ctx context.Context, id string) ([]byte, error) {
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

// Depth is queue.Depth: the same fields, in the same order.
type Depth struct {
	Pending, Leased, Expired, Delayed, Due, Dead, Parked int64
	OldestPending                                        time.Duration
}

// Depth is queue.Queue.Depth.
func (q *Store) Depth(ctx context.Context) (Depth, error) {
	r, err := depthScript.Run(ctx, q.rdb, q.k.depthKeys, encodingPin).Int64Slice()
	if err != nil {
		return Depth{}, q.wrap("depth", err)
	}
	if len(r) != 8 {
		return Depth{}, q.wrap("depth", fmt.Errorf("%w: %d values", errUnexpectedScript, len(r)))
	}
	return Depth{
		Pending: r[0], Leased: r[1], Expired: r[2], Delayed: r[3], Due: r[4], Dead: r[5], Parked: r[6],
		OldestPending: time.Duration(max(r[7], 0)) * time.Millisecond,
	}, nil
}

// wrap names the queue and the operation in err; nil stays nil.
func (q *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	heal.Notice(q.rdb, err) // a ClusterClient whose master died finds its replica
	return fmt.Errorf("queue %s: %s: %w", q.name, op, err)
}
