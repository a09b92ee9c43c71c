package qstore_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// enqueueVariant is one way to enqueue, with the commands its script
// call runs (besides the evalsha), and the keys it writes, by their
// suffix after the queue's tag.
type enqueueVariant struct {
	name    string
	enqueue func(ctx context.Context, q *qstore.Store, i int) error
	runs    map[string]int64
	writes  []string
}

func enqueueVariants() []enqueueVariant {
	payload := []byte("a payload")
	with := func(opts func(i int) qstore.EnqueueOptions) func(context.Context, *qstore.Store, int) error {
		return func(ctx context.Context, q *qstore.Store, i int) error {
			_, _, err := q.EnqueueWith(ctx, payload, opts(i))
			return err
		}
	}
	batch := func(n int, opts qstore.EnqueueOptions) func(context.Context, *qstore.Store, int) error {
		return func(ctx context.Context, q *qstore.Store, _ int) error {
			payloads := make([][]byte, n)
			for i := range payloads {
				payloads[i] = payload
			}
			_, err := q.EnqueueBatchWith(ctx, payloads, opts)
			return err
		}
	}
	pending := []string{":values", ":pending"}
	return []enqueueVariant{
		{"Enqueue", func(ctx context.Context, q *qstore.Store, _ int) error {
			_, err := q.Enqueue(ctx, payload)
			return err
		}, map[string]int64{"hset": 1, "lpush": 1}, pending},
		{"EnqueueWith+delay", with(func(int) qstore.EnqueueOptions { return qstore.EnqueueOptions{Delay: time.Hour} }),
			map[string]int64{"time": 1, "hset": 1, "zadd": 1}, []string{":values", ":delayed"}},
		{"EnqueueWith+attempts", with(func(int) qstore.EnqueueOptions { return qstore.EnqueueOptions{MaxAttempts: 3} }),
			map[string]int64{"hset": 2, "lpush": 1}, append(pending, ":limits")},
		{"EnqueueWith+priority", with(func(int) qstore.EnqueueOptions { return qstore.EnqueueOptions{Priority: "high"} }),
			map[string]int64{"hexists": 1, "hset": 2, "lpush": 1}, []string{":values", ":lanes", ":pending:high"}},
		{"EnqueueWith+unique", with(func(i int) qstore.EnqueueOptions {
			return qstore.EnqueueOptions{Unique: fmt.Sprint("u", i), UniqueFor: time.Hour}
		}), map[string]int64{"hget": 1, "hset": 2, "lpush": 1, "pexpire": 1}, pending},
		{"EnqueueWith+unique+delay", with(func(i int) qstore.EnqueueOptions {
			return qstore.EnqueueOptions{Unique: fmt.Sprint("u", i), UniqueFor: time.Hour, Delay: time.Hour}
		}), map[string]int64{"hget": 1, "hset": 2, "time": 1, "zadd": 1, "pexpire": 1}, []string{":values", ":delayed"}},
		{"EnqueueWith+unique+attempts", with(func(i int) qstore.EnqueueOptions {
			return qstore.EnqueueOptions{Unique: fmt.Sprint("u", i), UniqueFor: time.Hour, MaxAttempts: 3}
		}), map[string]int64{"hget": 1, "hset": 3, "lpush": 1, "pexpire": 1}, append(pending, ":limits")},
		{"EnqueueWith+attempts+priority", with(func(int) qstore.EnqueueOptions {
			return qstore.EnqueueOptions{MaxAttempts: 3, Priority: "high"}
		}), map[string]int64{"hexists": 1, "hset": 3, "lpush": 1},
			[]string{":values", ":limits", ":lanes", ":pending:high"}},
		{"EnqueueWith+chain", with(func(int) qstore.EnqueueOptions {
			return qstore.EnqueueOptions{Chain: qstore.ChainStep{ID: "c", Step: 1, Steps: 2}}
		}), map[string]int64{"hexists": 1, "hset": 2, "lpush": 1, "pexpire": 1},
			append(pending, ":chain:c")},
		{"EnqueueBatch-1", batch(1, qstore.EnqueueOptions{}),
			map[string]int64{"hmget": 1, "hset": 1, "lpush": 1}, pending},
		{"EnqueueBatch-100", batch(100, qstore.EnqueueOptions{}),
			map[string]int64{"hmget": 1, "hset": 1, "lpush": 1}, pending},
		{"EnqueueBatch-100+attempts+priority", batch(100, qstore.EnqueueOptions{MaxAttempts: 3, Priority: "high"}),
			map[string]int64{"hmget": 1, "hexists": 1, "hset": 3, "lpush": 1},
			[]string{":values", ":limits", ":lanes", ":pending:high"}},
		{"EnqueueBatch-100+delay+attempts+priority", batch(100, qstore.EnqueueOptions{Delay: time.Hour, MaxAttempts: 3, Priority: "high"}),
			map[string]int64{"hmget": 1, "hexists": 1, "time": 1, "hset": 3, "zadd": 1}, []string{":values", ":limits", ":lanes", ":delayed"}},
	}
}

// An enqueue's script call runs a fixed set of commands, whatever the
// number of items in it: one read of values (none for one item without
// options: the write tells a resent call) and one write per structure
// (and TIME for a delay). A pending item's ready time is its id's. A batch of 100 runs what a batch of 1 runs, which is why
// EnqueueBatch and tasks.EnqueueMany add items several times faster than
// one call each (BENCHMARKS.md).
func TestEnqueueCommands(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	// One after the other on one server: each reads its own commands.
	for _, v := range enqueueVariants() {
		t.Run(v.name, func(t *testing.T) {
			q := storeOn(t, b.rdb)
			if err := v.enqueue(ctx, q, 0); err != nil { // loads the script
				t.Fatal(err)
			}
			before := b.srv.CommandStats(t)
			if err := v.enqueue(ctx, q, 1); err != nil {
				t.Fatal(err)
			}
			after := b.srv.CommandStats(t)
			got := map[string]int64{}
			for cmd, n := range after {
				// Each reading's own connection says HELLO, INFO and
				// (Redis 7.2+, Valkey) CLIENT SETINFO.
				if d := n - before[cmd]; d != 0 && cmd != "info" && cmd != "hello" && cmd != "client|setinfo" {
					got[cmd] = d
				}
			}
			want := maps.Clone(v.runs)
			want["evalsha"] = 1
			if !maps.Equal(got, want) {
				t.Fatalf("one call ran %v, want %v", got, want)
			}
		})
	}
}

// storeOn makes the store of a queue on rdb under a prefix of the test's,
// with the priority "high" weighted.
func storeOn(t *testing.T, rdb *redis.Client) *qstore.Store {
	t.Helper()
	q, err := queue.New(rdb, "jobs", queue.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetPriorities(testContext(t), map[string]int{"high": 2}); err != nil {
		t.Fatal(err)
	}
	return qstore.Of(q)
}

// A key of the wrong type fails an enqueue with nothing written, whichever
// of the keys it writes is malformed, on a queue in use (its hashes
// pinned) and on a new one (no key yet: not even the encoding pin stays).
func TestEnqueueWrongKeyTypeWritesNothing(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	for _, v := range enqueueVariants() {
		for _, bad := range v.writes {
			for _, used := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/used=%v", v.name, bad, used), func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					q := storeOn(t, rdb)
					if used {
						for i := range 2 {
							if err := v.enqueue(ctx, q, -1-i); err != nil {
								t.Fatal(err)
							}
						}
					}
					key := tagOf(q) + bad
					if err := rdb.Del(ctx, key).Err(); err != nil {
						t.Fatal(err)
					}
					if err := rdb.Set(ctx, key, "garbage", 0).Err(); err != nil {
						t.Fatal(err)
					}
					before := snapshot(t, rdb, tagOf(q))
					err := v.enqueue(ctx, q, 0)
					if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
						t.Fatalf("enqueue with %s malformed = %v, want WRONGTYPE", bad, err)
					}
					if after := snapshot(t, rdb, tagOf(q)); !maps.Equal(after, before) {
						t.Fatalf("a failed enqueue changed the queue:\nbefore %v\nafter  %v", before, after)
					}
				})
			}
		}
	}
}

// snapshot is every key under tag with its type and its content.
func snapshot(t *testing.T, rdb *redis.Client, tag string) map[string]string {
	t.Helper()
	ctx := testContext(t)
	keys, err := rdb.Keys(ctx, tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "set":
			v, err = rdb.SMembers(ctx, k).Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fmt.Sprintf("%s %v", typ, v)
	}
	return out
}

// A unique key's lock that a settle handed on names the chain's first
// item; once its holder is gone, the next item to take the lock makes it
// its own: a duplicate then gets that item's id, not the old first.
func TestEnqueueUniqueRetakesAHandedOnLock(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	lock := tagOf(b.q) + ":unique:k"
	if err := b.rdb.HSet(ctx, lock, "id", "gone", "first", "chain-id").Err(); err != nil {
		t.Fatal(err)
	}
	opts := qstore.EnqueueOptions{Unique: "k", UniqueFor: time.Hour}
	id := mustEnqueueWith(t, b.q, "a", opts, false)
	if got, err := b.rdb.HGetAll(ctx, lock).Result(); err != nil || !maps.Equal(got, map[string]string{"id": id}) {
		t.Fatalf("lock = %v, %v; want only id %s", got, err, id)
	}
	if dup := mustEnqueueWith(t, b.q, "b", opts, true); dup != id {
		t.Fatalf("duplicate got %s, want the holder %s", dup, id)
	}
	if ttl, err := b.rdb.PTTL(ctx, lock).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Fatalf("lock's TTL = %v, %v; want UniqueFor", ttl, err)
	}
}
