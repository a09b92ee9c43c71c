package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// EnqueueWith's options against the documented rule, written apart from
// the code: a refused option writes nothing; an accepted one adds one
// item, delayed exactly when Delay > 0, and a unique key returns it again
// while it lives.
func FuzzEnqueueWith(f *testing.F) {
	const year = int64(365 * 24 * time.Hour)
	f.Add(int64(0), 0, "", int64(0))
	f.Add(int64(time.Second), 3, "k", int64(time.Minute))
	f.Add(int64(-1), 0, "", int64(0))
	f.Add(year, 1000, strings.Repeat("k", 512), year)
	f.Add(year+1, 1001, strings.Repeat("k", 513), year+1)
	f.Add(int64(1), -1, "{x}:*", int64(1))
	f.Add(int64(0), 0, "", int64(time.Second))
	f.Add(int64(0), 0, "k", int64(0))
	f.Add(int64(0), 0, "\x00\xff", int64(-time.Second))
	rdb := redistest.Start(f).Client(f)
	q := newQueue(f, rdb, "options", queue.Config{})

	f.Fuzz(func(t *testing.T, delay int64, attempts int, unique string, uniqueFor int64) {
		ctx := fuzzContext(t)
		opts := queue.EnqueueOptions{Delay: time.Duration(delay), MaxAttempts: attempts, Unique: unique, UniqueFor: time.Duration(uniqueFor)}
		valid := delay >= 0 && delay <= year && attempts >= 0 && attempts <= 1000 && len(unique) <= 512 &&
			(unique == "" && uniqueFor == 0 || unique != "" && uniqueFor > 0 && uniqueFor <= year)
		id, dup, err := q.EnqueueWith(ctx, []byte("p"), opts)
		if !valid {
			if id != "" || dup || !errors.Is(err, queue.ErrInvalidArgument) {
				t.Fatalf("EnqueueWith(%+v) = %q, %v, %v; want ErrInvalidArgument", opts, id, dup, err)
			}
			if n, err := rdb.DBSize(ctx).Result(); n != 0 || err != nil {
				t.Fatalf("a refused EnqueueWith(%+v) left %d keys (%v)", opts, n, err)
			}
			return
		}
		if id == "" || dup || err != nil {
			t.Fatalf("EnqueueWith(%+v) = %q, %v, %v; want a new item", opts, id, dup, err)
		}
		_, zerr := rdb.ZScore(ctx, tagOf(q)+":delayed", id).Result()
		if delayed := zerr == nil; delayed != (delay > 0) || zerr != nil && !errors.Is(zerr, redis.Nil) {
			t.Fatalf("EnqueueWith(%+v): delayed %v (%v), want %v", opts, delayed, zerr, delay > 0)
		}
		if unique != "" && uniqueFor >= int64(time.Second) {
			if again, dup, err := q.EnqueueWith(ctx, []byte("q"), opts); again != id || !dup || err != nil {
				t.Fatalf("again: %q, %v, %v; want %s, a duplicate", again, dup, err, id)
			}
		}
		if err := rdb.FlushDB(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	})
}
