package qstore

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

// A resent enqueue script call (the client retries after a lost reply)
// names the same ids, so it adds nothing twice.
func TestEnqueueScriptIsIdempotent(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	q := testStore(rdb, "idem", Config{Prefix: "t-idem"})
	ctx := context.Background()
	args := []any{encodingPin, 0, 0, "", newID(), "a", newID(), "b"}
	for i, want := range []int{2, 0} {
		n, err := enqueueScript.Run(ctx, rdb, q.k.enqueueKeys, args...).Int()
		if n != want || err != nil {
			t.Fatalf("call %d added %d (%v), want %d", i, n, err, want)
		}
	}
	if n, err := rdb.LLen(ctx, q.k.pending).Result(); n != 2 || err != nil {
		t.Fatalf("pending has %d (%v), want 2", n, err)
	}
}

func TestIDsAreDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 10000 {
		id := newID()
		if len(id) != 26 || seen[id] {
			t.Fatalf("id %q: wrong length or repeated", id)
		}
		seen[id] = true
	}
}

// A resent EnqueueWith script call (its reply lost) names the same id: it
// adds nothing twice, and a unique key held by that very id is no
// duplicate; nor is one that another item took since, while this id is
// still queued. Both unique scripts: the usual item's and the one with
// every option. A lock key of the wrong type fails the call with nothing
// written.
func TestEnqueueWithScriptIsIdempotent(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	// call is each script's keys and arguments for id with a unique key
	// "u" of a minute, due in delay.
	type call func(q *Store, id string, delay time.Duration) ([]string, []any)
	for name, c := range map[string]struct {
		script *redis.Script
		call   call
	}{
		"one": {enqueueOneScript, func(q *Store, id string, delay time.Duration) ([]string, []any) {
			return q.enqueueOneCall(id, []byte("p"), EnqueueOptions{Delay: delay, Unique: "u", UniqueFor: time.Minute})
		}},
		"with": {enqueueUniqueScript, func(q *Store, id string, delay time.Duration) ([]string, []any) {
			keys := append(append([]string(nil), q.k.enqueueWithKeys...), q.k.unique("u"))
			return keys, []any{encodingPin, id, "p", delay.Milliseconds(), 0, 60000}
		}},
	} {
		script := c.script
		q := testStore(rdb, "idem", Config{Prefix: "t-idem-" + name})
		id := newID()
		for i, delay := range []time.Duration{0, 0, 5 * time.Second} { // the third resend differs: still nothing new
			keys, args := c.call(q, id, delay)
			added, err := script.Run(ctx, rdb, keys, args...).Int()
			want := 0 // a resend
			if i == 0 {
				want = 1
			}
			if err != nil || added != want {
				t.Fatalf("%s: call %d = %d, %v; want %d", name, i, added, err, want)
			}
		}
		other, _, err := q.EnqueueWith(ctx, []byte("o"), EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, q.k.unique("u"), "id", other).Err(); err != nil {
			t.Fatal(err)
		}
		keys, args := c.call(q, id, 0)
		if added, err := script.Run(ctx, rdb, keys, args...).Result(); err != nil || added != int64(0) {
			t.Fatalf("%s: resent after another item took the lock = %v, %v; want 0", name, added, err)
		}
		if n, err := rdb.LLen(ctx, q.k.pending).Result(); n != 2 || err != nil {
			t.Fatalf("%s: pending has %d (%v), want 2", name, n, err)
		}
		if n, err := rdb.ZCard(ctx, q.k.delayed).Result(); n != 0 || err != nil {
			t.Fatalf("%s: delayed has %d (%v), want 0", name, n, err)
		}
	}

	q := testStore(rdb, "idem", Config{Prefix: "t-idem-with"})
	bad := q.k.unique("hash")
	if err := rdb.Set(ctx, bad, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before, _ := rdb.HLen(ctx, q.k.values).Result()
	if _, _, err := q.EnqueueWith(ctx, []byte("x"), EnqueueOptions{Unique: "hash", UniqueFor: time.Minute}); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("EnqueueWith on a malformed lock: %v, want WRONGTYPE", err)
	}
	if after, _ := rdb.HLen(ctx, q.k.values).Result(); after != before {
		t.Fatalf("values went from %d to %d on a failed call", before, after)
	}
}

// Without a unique key, the write of the value is what tells a resent
// call: each option's resend adds nothing, to any structure.
func TestEnqueueWithResentWithoutUniqueAddsNothing(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	for _, opts := range []EnqueueOptions{{}, {Delay: time.Hour}, {MaxAttempts: 3}, {Priority: "high"}, {Chain: ChainStep{ID: "c", Step: 1, Steps: 2}}} {
		q := testStore(rdb, fmt.Sprintf("resent-%+v", opts), Config{})
		if err := q.SetPriorities(ctx, map[string]int{"high": 2}); err != nil {
			t.Fatal(err)
		}
		id, _, err := q.EnqueueWith(ctx, []byte("p"), opts)
		if err != nil {
			t.Fatal(err)
		}
		before := dumpKeys(t, rdb, q.k.tag)
		script, keys, args := q.enqueueWithCall(id, []byte("p"), opts)
		if n, err := script.Run(ctx, rdb, keys, args...).Int(); n != 0 || err != nil {
			t.Fatalf("%+v: the resend = %d, %v; want 0", opts, n, err)
		}
		if after := dumpKeys(t, rdb, q.k.tag); !maps.Equal(after, before) {
			t.Fatalf("%+v: the resend changed the queue:\nbefore %v\nafter  %v", opts, before, after)
		}
	}
}

// dumpKeys is every key under tag with its DUMP.
func dumpKeys(t *testing.T, rdb *redis.Client, tag string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		if out[k], err = rdb.Dump(ctx, k).Result(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
