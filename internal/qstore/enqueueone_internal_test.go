package qstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

// The usual item's script (enqueueone.lua) does what enqueuewith.lua does
// for the same options, this release's and the previous release's (which
// a rolling deploy runs beside it): the same replies and the same keys,
// fields, encodings and lifetimes in Redis, after the same calls. Each
// case is a combination of options, a state of the unique key's lock and
// a key of the wrong type, or none: a call, its resend, and a second item
// with the same options.
func TestEnqueueOneMatchesEnqueueWith(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	previousWith := previousEnqueueWith(t)
	// the paths, each of which enqueues payload as id with opts on q.
	paths := []struct {
		name string
		run  func(ctx context.Context, q *Store, id string, payload []byte, opts EnqueueOptions) (any, error)
	}{
		{"one", func(ctx context.Context, q *Store, id string, payload []byte, opts EnqueueOptions) (any, error) {
			script, keys, args := q.enqueueWithCall(id, payload, opts)
			if script != enqueueOneScript && script != enqueueOneDelayedScript {
				t.Fatalf("%+v: not enqueueone.lua", opts)
			}
			return script.Run(ctx, rdb, keys, args...).Result()
		}},
		{"with", func(ctx context.Context, q *Store, id string, payload []byte, opts EnqueueOptions) (any, error) {
			script := enqueueWithScript
			if opts.Unique != "" {
				script = enqueueUniqueScript
			}
			keys, args := enqueueWithLayout(q, id, payload, opts)
			return script.Run(ctx, rdb, keys, args...).Result()
		}},
		{"previous", func(ctx context.Context, q *Store, id string, payload []byte, opts EnqueueOptions) (any, error) {
			keys, args := enqueueWithLayout(q, id, payload, opts)
			return previousWith.Run(ctx, rdb, keys, args...).Result()
		}},
	}
	unique := func(o EnqueueOptions) EnqueueOptions {
		o.Unique, o.UniqueFor = "u", time.Hour
		return o
	}
	all := unique(EnqueueOptions{Delay: time.Hour, MaxAttempts: 3, Priority: "high"})
	optionSets := []EnqueueOptions{
		{}, {Delay: time.Hour}, {Delay: time.Nanosecond}, {MaxAttempts: 3}, {Priority: "high"}, {Priority: "default"},
		{Priority: "unweighted"}, {Delay: time.Hour, MaxAttempts: 3, Priority: "high"}, {MaxAttempts: 3, Priority: "high"},
		unique(EnqueueOptions{}), unique(EnqueueOptions{Delay: time.Hour}), unique(EnqueueOptions{MaxAttempts: 3}),
		unique(EnqueueOptions{Priority: "high"}), unique(EnqueueOptions{Priority: "unweighted"}), all,
	}
	const holder, first = "01HOLDER00000000000000000A", "01FIRST000000000000000000A"
	// locks are the states of the lock on "u" (and of its holder), as
	// settle, cancel, purge and an expiry leave them.
	locks := map[string]func(ctx context.Context, q *Store, id string) error{
		"free": nil,
		"live": func(ctx context.Context, q *Store, _ string) error {
			return holdLock(ctx, rdb, q, holder, true, "id", holder)
		},
		"acked or purged": func(ctx context.Context, q *Store, _ string) error {
			return holdLock(ctx, rdb, q, holder, false, "id", holder)
		},
		"dead": func(ctx context.Context, q *Store, _ string) error {
			if err := holdLock(ctx, rdb, q, holder, true, "id", holder); err != nil {
				return err
			}
			return rdb.ZAdd(ctx, q.k.dead, redis.Z{Score: 1, Member: holder}).Err()
		},
		"handed on, live": func(ctx context.Context, q *Store, _ string) error {
			return holdLock(ctx, rdb, q, holder, true, "id", holder, "first", first)
		},
		"handed on, acked": func(ctx context.Context, q *Store, _ string) error {
			return holdLock(ctx, rdb, q, holder, false, "id", holder, "first", first)
		},
		// The call's own id, no longer queued: a resend after its ack.
		"own, acked": func(ctx context.Context, q *Store, id string) error {
			return holdLock(ctx, rdb, q, holder, false, "id", id)
		},
	}
	type broken struct {
		key  func(q *Store) string
		lock string // the lock's state: only that state reads the key
	}
	// bad are the keys of the wrong type that a call may meet.
	bad := map[string]broken{
		"values":       {func(q *Store) string { return q.k.values }, "free"},
		"pending":      {func(q *Store) string { return q.k.pending }, "free"},
		"pending:high": {func(q *Store) string { return q.k.pending + ":high" }, "free"},
		"delayed":      {func(q *Store) string { return q.k.delayed }, "free"},
		"limits":       {func(q *Store) string { return q.k.limits }, "free"},
		"lanes":        {func(q *Store) string { return q.k.lanes }, "free"},
		"weights":      {func(q *Store) string { return q.k.weights }, "free"},
		"lock":         {func(q *Store) string { return q.k.unique("u") }, "free"},
		"dead":         {func(q *Store) string { return q.k.dead }, "live"},
	}
	payloads := [][]byte{[]byte("p"), []byte(encodingPin), []byte("\x00\xff"), []byte(strings.Repeat("large ", 100_000))}

	ctx := context.Background()
	n := 0
	met := map[string]bool{} // the malformed keys that failed a call
	check := func(t *testing.T, name string, opts EnqueueOptions, payload []byte, lock string, badKey string) {
		t.Helper()
		ids := []string{newID(), newID()}
		var wantReplies []string
		var want queueState
		for _, p := range paths {
			n++
			q := testStore(rdb, "one", Config{Prefix: fmt.Sprintf("t-oneswith-%d", n)})
			if err := q.SetPriorities(ctx, map[string]int{"high": 2}); err != nil {
				t.Fatal(err)
			}
			if set := locks[lock]; set != nil {
				if err := set(ctx, q, ids[0]); err != nil {
					t.Fatal(err)
				}
			}
			if badKey != "" {
				key := bad[badKey].key(q)
				if err := rdb.Del(ctx, key).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.Set(ctx, key, "garbage", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			var replies []string
			for _, id := range []string{ids[0], ids[0], ids[1]} {
				r, err := p.run(ctx, q, id, payload, opts)
				replies = append(replies, replyText(r, err))
			}
			state := stateOf(t, rdb, q.k.tag)
			if p.name == paths[0].name {
				wantReplies, want = replies, state
				if badKey != "" && strings.HasPrefix(replies[0], "WRONGTYPE") {
					met[badKey] = true
				}
				continue
			}
			if !slices.EqualFunc(replies, wantReplies, sameReply) {
				t.Errorf("%s: replies %s %q, %s %q", name, paths[0].name, wantReplies, p.name, replies)
			}
			if diff := want.diff(state); diff != "" {
				t.Errorf("%s: Redis after %s and %s differs: %s", name, paths[0].name, p.name, diff)
			}
		}
	}
	for _, opts := range optionSets {
		for lock := range locks {
			if opts.Unique == "" && lock != "free" {
				continue
			}
			check(t, fmt.Sprintf("%+v, lock %s", opts, lock), opts, []byte("p"), lock, "")
		}
		for key, b := range bad {
			check(t, fmt.Sprintf("%+v, %s malformed", opts, key), opts, []byte("p"), b.lock, key)
		}
	}
	for _, opts := range []EnqueueOptions{{}, all} {
		for _, payload := range payloads {
			check(t, fmt.Sprintf("%+v, payload of %d bytes", opts, len(payload)), opts, payload, "free", "")
		}
	}
	for key := range bad {
		if !met[key] {
			t.Errorf("no call met %s malformed", key)
		}
	}
}

// sameReply says whether two scripts' replies are the same, or both an
// error: enqueuewith.lua looks the id up before it checks the priority,
// when the item has a unique key, so that one call with both wrong may
// fail on either, writing nothing.
func sameReply(a, b string) bool {
	return a == b || isScriptError(a) && isScriptError(b)
}

func isScriptError(reply string) bool {
	return strings.HasPrefix(reply, "ERR ") || strings.HasPrefix(reply, "WRONGTYPE ")
}

// previousEnqueueWith is the previous release's enqueuewith.lua, as
// Releases assembles it.
func previousEnqueueWith(t *testing.T) *redis.Script {
	t.Helper()
	var src strings.Builder
	for _, p := range []string{"unique", "undo", "lanes", "enqueuewith"} {
		b, err := previousFiles.ReadFile("testdata/previous/" + p + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	return redis.NewScript(src.String())
}

// enqueueWithLayout is enqueuewith.lua's keys and arguments for payload as
// id with opts, which has no chain or trace context.
func enqueueWithLayout(q *Store, id string, payload []byte, opts EnqueueOptions) ([]string, []any) {
	keys := slices.Clone(q.k.enqueueWithKeys)
	if opts.Unique != "" {
		keys = append(keys, q.k.unique(opts.Unique))
	}
	return keys, []any{encodingPin, id, payload, ceilMillis(opts.Delay), opts.MaxAttempts, ceilMillis(opts.UniqueFor), "", 0, 0, opts.Priority}
}

// holdLock makes the lock on "u" a hash of fields for an hour, and holder
// a live item (valued and pending) when live, else an item gone.
func holdLock(ctx context.Context, rdb *redis.Client, q *Store, holder string, live bool, fields ...any) error {
	if live {
		if err := rdb.HSet(ctx, q.k.values, "", encodingPin, holder, "h").Err(); err != nil {
			return err
		}
		if err := rdb.LPush(ctx, q.k.pending, holder).Err(); err != nil {
			return err
		}
	}
	if err := rdb.HSet(ctx, q.k.unique("u"), fields...).Err(); err != nil {
		return err
	}
	return rdb.PExpire(ctx, q.k.unique("u"), time.Hour).Err()
}

// replyText is a script's reply, or its error's code and message without
// the script's name and line.
func replyText(r any, err error) string {
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), " script:")
		return msg
	}
	return fmt.Sprintf("%T %v", r, r)
}

// queueState is a queue's keys (named after "TAG" rather than its hash
// tag), each with its type, encoding and content, but for the scores of
// sorted sets and keys' lifetimes, which TIME makes differ by a few ms.
type queueState struct {
	keys   map[string]string
	scores map[string]float64 // "key member"
	ttls   map[string]time.Duration
}

func stateOf(t *testing.T, rdb *redis.Client, tag string) queueState {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	s := queueState{keys: map[string]string{}, scores: map[string]float64{}, ttls: map[string]time.Duration{}}
	for _, k := range keys {
		name := "TAG" + strings.TrimPrefix(k, tag)
		typ := rdb.Type(ctx, k).Val()
		enc := rdb.ObjectEncoding(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "zset":
			var zs []redis.Z
			zs, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
			var members []string
			for _, z := range zs {
				members = append(members, z.Member.(string))
				s.scores[name+" "+z.Member.(string)] = z.Score
			}
			slices.Sort(members)
			v = members
		default:
			t.Fatalf("key %s of type %s", k, typ)
		}
		if err != nil {
			t.Fatal(err)
		}
		s.keys[name] = fmt.Sprintf("%s %s %v", typ, enc, v)
		if s.ttls[name], err = rdb.PTTL(ctx, k).Result(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// diff says how s and o differ ("" if not), but for a second's drift of
// scores and lifetimes.
func (s queueState) diff(o queueState) string {
	if !maps.Equal(s.keys, o.keys) {
		return fmt.Sprintf("\n%v\n%v", s.keys, o.keys)
	}
	for m, score := range s.scores {
		if other, ok := o.scores[m]; !ok || math.Abs(other-score) > 1000 {
			return fmt.Sprintf("score of %s: %v, %v", m, score, o.scores[m])
		}
	}
	for k, ttl := range s.ttls {
		if d := o.ttls[k] - ttl; (ttl < 0) != (o.ttls[k] < 0) || d > time.Second || d < -time.Second {
			return fmt.Sprintf("lifetime of %s: %v, %v", k, ttl, o.ttls[k])
		}
	}
	return ""
}
