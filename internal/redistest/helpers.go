package redistest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RoundTrips counts the commands and pipelines a client sends, each one
// round trip to Redis: add it with rdb.AddHook, read it with Load.
type RoundTrips struct{ atomic.Int64 }

// DialHook passes dials through uncounted.
func (h *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts a command.
func (h *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline as one round trip.
func (h *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.Add(1)
		return next(ctx, cmds)
	}
}

// Prefix is a valid worksteal key prefix ([A-Za-z0-9._-], at most 64
// bytes) unique to the test, so that tests may share one Redis.
func Prefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 62 {
		sum := sha1.Sum([]byte(name))
		name = name[:48] + "-" + hex.EncodeToString(sum[:6])
	}
	return "t-" + name
}

// HashTag is what Redis Cluster hashes a key by: the bytes between the
// first '{' and the first '}' after it when not empty, else the whole key.
// Tests check key layouts with it, apart from the code that builds them.
func HashTag(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key
	}
	tag, _, ok := strings.Cut(rest, "}")
	if !ok || tag == "" {
		return key
	}
	return tag
}
