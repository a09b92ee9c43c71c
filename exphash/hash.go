package exphash

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/heal"
)

var (
	//go:embed set.lua
	setSource string
	setScript = redis.NewScript(setSource)

	//go:embed get.lua
	getSource string
	getScript = redis.NewScript(getSource)

	//go:embed delete.lua
	deleteSource string
	deleteScript = redis.NewScript(deleteSource)

	//go:embed evict.lua
	evictSource string
	evictScript = redis.NewScript(evictSource)
)

// Errors of this package. Those about an argument wrap a message naming it.
var (
	ErrInvalidArgument = errors.New("exphash: invalid argument")
	ErrNotFound        = errors.New("exphash: not found")
)

// batchMax bounds the fields of one script call, [Hash.Evict]'s max and a
// chunk of [Hash.Delete]: a script blocks Redis while it runs, so each call
// stays around a millisecond of work.
const batchMax = 1000

// Hash is a Redis hash whose fields each carry an expiry, for Redis
// without HEXPIRE: the values live in one hash, their expiry times in a
// sorted set beside it, and [Hash.Evict] removes the expired fields. Reads
// never see an expired field, evicted or not. It is safe for concurrent
// use.
type Hash struct {
	rdb  redis.Scripter
	keys []string // values, expiry
	name string
}

// New returns the expiring hash called key. Its two Redis keys share one
// hash tag, so its scripts run on one Redis Cluster slot: a key without
// braces gets "{KEY}:values" and "{KEY}:expiry"; a key that has a hash tag
// already (as in "app:{tenant7}:sessions") gets "KEY:values" and
// "KEY:expiry". Any other key with a brace is an error, as is an empty
// one. New makes no Redis call.
func New(rdb redis.Scripter, key string) (*Hash, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidArgument)
	}
	values, expiry, err := hashKeys(key)
	if err != nil {
		return nil, err
	}
	// A ClusterClient whose master died finds its replica (package heal).
	return &Hash{rdb: heal.Scripter(rdb), keys: []string{values, expiry}, name: key}, nil
}

// hashKeys returns the keys of the expiring hash key; see New.
func hashKeys(key string) (values, expiry string, err error) {
	switch {
	case key == "":
		return "", "", fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case !strings.ContainsAny(key, "{}"):
		key = "{" + key + "}"
	case !hasHashTag(key):
		return "", "", fmt.Errorf("%w: key %q has a brace but no hash tag; use a key without braces, or one with a non-empty {tag}", ErrInvalidArgument, key)
	}
	return key + ":values", key + ":expiry", nil
}

// hasHashTag applies Redis Cluster's rule: the part between the first '{'
// and the first '}' after it, if not empty, is what the slot is hashed from.
func hasHashTag(key string) bool {
	_, rest, ok := strings.Cut(key, "{")
	return ok && strings.IndexByte(rest, '}') > 0
}

// Name returns the key the hash was made with, as given to [New].
func (h *Hash) Name() string { return h.name }

// Keys returns the Redis keys of the hash: the values (field → value) and
// the expiries (sorted set field → expiry in Unix milliseconds, by Redis's
// clock).
func (h *Hash) Keys() (values, expiry string) { return h.keys[0], h.keys[1] }

// Set writes field with value, to expire ttl (at least 1ms) from now by
// Redis's clock; setting it again replaces both.
func (h *Hash) Set(ctx context.Context, field string, value []byte, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: ttl %v is below 1ms", ErrInvalidArgument, ttl)
	}
	err := setScript.Run(ctx, h.rdb, h.keys, field, value, ttl.Milliseconds()).Err()
	return h.wrap("set", err)
}

// Get returns the value of field, or an error wrapping [ErrNotFound] if it
// is missing or has expired.
func (h *Hash) Get(ctx context.Context, field string) ([]byte, error) {
	v, err := getScript.Run(ctx, h.rdb, h.keys, field).Text()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: field %q of %s", ErrNotFound, field, h.name)
	}
	if err != nil {
		return nil, h.wrap("get", err)
	}
	return []byte(v), nil
}

// Delete removes fields with their expiries, in one script call per 1,000
// fields, and returns how many had a value (expired or not).
func (h *Hash) Delete(ctx context.Context, fields ...string) (int, error) {
	deleted := 0
	for start := 0; start < len(fields); start += batchMax {
		chunk := fields[start:min(start+batchMax, len(fields))]
		args := make([]any, len(chunk))
		for i, f := range chunk {
			args[i] = f
		}
		n, err := deleteScript.Run(ctx, h.rdb, h.keys, args...).Int()
		deleted += n
		if err != nil {
			return deleted, h.wrap("delete", err)
		}
	}
	return deleted, nil
}

// Evict removes up to max (1 to 1,000) expired fields, the longest expired
// first, and returns how many it removed; n == max means more may have
// expired. It is one script, which reads the expired fields and removes
// them together, so a field set again with a later expiry is never
// removed. [github.com/worksteal/worksteal/jobs.EvictExpired] calls it in
// slices borrowed from web servers.
func (h *Hash) Evict(ctx context.Context, max int) (n int, err error) {
	if max < 1 || max > batchMax {
		return 0, fmt.Errorf("%w: evict max %d is not in [1, %d]", ErrInvalidArgument, max, batchMax)
	}
	n, err = evictScript.Run(ctx, h.rdb, h.keys, max).Int()
	return n, h.wrap("evict", err)
}

// wrap names the hash and the operation in err; nil stays nil.
func (h *Hash) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("exphash: %s: %s: %w", h.name, op, err)
}
