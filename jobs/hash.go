package jobs

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed hash_set.lua
	hashSetSource string
	hashSetScript = redis.NewScript(hashSetSource)

	//go:embed hash_get.lua
	hashGetSource string
	hashGetScript = redis.NewScript(hashGetSource)

	//go:embed hash_delete.lua
	hashDeleteSource string
	hashDeleteScript = redis.NewScript(hashDeleteSource)
)

// ExpiringHash is a Redis hash whose fields each carry an expiry, for
// Redis without HEXPIRE: the values live in one hash, their expiry times
// in a sorted set beside it, and [EvictExpired] removes the expired fields
// in slices. Reads never see an expired field, evicted or not. It is safe
// for concurrent use.
type ExpiringHash struct {
	rdb     redis.Scripter
	keys    []string // values, expiry
	subject string
}

// NewExpiringHash returns the expiring hash called key. Its two Redis keys
// share one hash tag, so its scripts run on one Redis Cluster slot: a key
// without braces gets "{KEY}:values" and "{KEY}:expiry"; a key that has a
// hash tag already (as in "app:{tenant7}:sessions") gets "KEY:values" and
// "KEY:expiry". Any other key with a brace is an error, as is an empty
// one. NewExpiringHash makes no Redis call.
func NewExpiringHash(rdb redis.Scripter, key string) (*ExpiringHash, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidArgument)
	}
	values, expiry, err := hashKeys(key)
	if err != nil {
		return nil, err
	}
	return &ExpiringHash{rdb: rdb, keys: []string{values, expiry}, subject: key}, nil
}

// hashKeys returns the keys of the expiring hash key; see NewExpiringHash.
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

// Keys returns the Redis keys of the hash: the values (field → value) and
// the expiries (sorted set field → expiry in Unix milliseconds, by Redis's
// clock).
func (h *ExpiringHash) Keys() (values, expiry string) { return h.keys[0], h.keys[1] }

// Set writes field with value, to expire ttl (at least 1ms) from now by
// Redis's clock; setting it again replaces both.
func (h *ExpiringHash) Set(ctx context.Context, field string, value []byte, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: ttl %v is below 1ms", ErrInvalidArgument, ttl)
	}
	err := hashSetScript.Run(ctx, h.rdb, h.keys, field, value, ttl.Milliseconds()).Err()
	return h.wrap("set", err)
}

// Get returns the value of field, or an error wrapping [ErrNotFound] if it
// is missing or has expired.
func (h *ExpiringHash) Get(ctx context.Context, field string) ([]byte, error) {
	v, err := hashGetScript.Run(ctx, h.rdb, h.keys, field).Text()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: field %q of %s", ErrNotFound, field, h.subject)
	}
	if err != nil {
		return nil, h.wrap("get", err)
	}
	return []byte(v), nil
}

// Delete removes fields with their expiries, in one script call per
// [BatchMax] fields, and returns how many had a value (expired or not).
func (h *ExpiringHash) Delete(ctx context.Context, fields ...string) (int, error) {
	deleted := 0
	for start := 0; start < len(fields); start += BatchMax {
		chunk := fields[start:min(start+BatchMax, len(fields))]
		args := make([]any, len(chunk))
		for i, f := range chunk {
			args[i] = f
		}
		n, err := hashDeleteScript.Run(ctx, h.rdb, h.keys, args...).Int()
		deleted += n
		if err != nil {
			return deleted, h.wrap("delete", err)
		}
	}
	return deleted, nil
}

// evict removes up to max expired fields and returns how many it removed.
func (h *ExpiringHash) evict(ctx context.Context, max int) (int, error) {
	n, err := evictFieldsScript.Run(ctx, h.rdb, h.keys, max).Int()
	if err != nil {
		return n, fmt.Errorf("evict fields of %s: %w", h.subject, err) // the job adds "jobs: NAME"
	}
	return n, nil
}

// wrap names the hash and the operation in err; nil stays nil.
func (h *ExpiringHash) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jobs: expiring hash %s: %s: %w", h.subject, op, err)
}
