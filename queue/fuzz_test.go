package queue_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
)

// The fuzz tests run against a real redis-server, one per fuzz test (and
// per fuzzing worker process). Each keeps its Redis state known between
// iterations, so that one iteration's check is not confused by another's.

// fuzzMaxPayload is small so that payloads at and past the bound are cheap.
const fuzzMaxPayload = 4096

// fuzzContext bounds one iteration's Redis calls: a stuck call fails the
// input instead of hanging the fuzzer.
func fuzzContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// neighbours is a queue beside the fuzzed one, under the same prefix, with
// an item pending and one acked: no input may change them.
type neighbours struct {
	q       *queue.Queue
	pending string
	done    string
}

const (
	neighbourPayload = "neighbour's payload"
	neighbourResult  = "neighbour's result"
)

func newNeighbours(f *testing.F, rdb redis.UniversalClient, prefix string) *neighbours {
	ctx := context.Background()
	n := &neighbours{q: newQueue(f, rdb, "neighbour", queue.Config{Prefix: prefix})}
	ids := mustEnqueue(f, n.q, neighbourPayload, neighbourPayload)
	n.done, n.pending = ids[0], ids[1]
	it := mustClaim(f, n.q, 1, 1)[0]
	if err := n.q.Ack(ctx, it, []byte(neighbourResult)); err != nil {
		f.Fatalf("neighbour Ack: %v", err)
	}
	return n
}

func (n *neighbours) check(t *testing.T, ctx context.Context) {
	t.Helper()
	if v, err := n.q.Value(ctx, n.pending); err != nil || string(v) != neighbourPayload {
		t.Fatalf("neighbour's pending value = %q, %v; want %q", v, err, neighbourPayload)
	}
	if r, err := n.q.Result(ctx, n.done); err != nil || string(r) != neighbourResult {
		t.Fatalf("neighbour's result = %q, %v; want %q", r, err, neighbourResult)
	}
	if s, err := n.q.Depth(ctx); err != nil || s.Pending != 1 || s.Leased+s.Delayed+s.Dead != 0 {
		t.Fatalf("neighbour's stats = %+v, %v; want one pending item", s, err)
	}
}

// payloadErr is what Enqueue must say of p: nil, or the documented error.
func payloadErr(p []byte) error {
	switch {
	case len(p) == 0:
		return queue.ErrEmptyPayload
	case len(p) > fuzzMaxPayload:
		return queue.ErrPayloadTooLarge
	}
	return nil
}

// FuzzPayloads: any bytes (empty, NUL, invalid UTF-8, colons, at and past
// MaxPayload) either round-trip exactly through Enqueue, Value, Claim, Ack,
// Result and Wait, or are refused with the documented error and nothing
// written; and the neighbouring queue is untouched.
func FuzzPayloads(f *testing.F) {
	f.Add([]byte("hello"), []byte("world"), byte('x'), uint16(100))
	f.Add([]byte{}, []byte("b"), byte(0), uint16(1))
	f.Add([]byte{0, 0, 0}, []byte("\xff\xfe\xfd"), byte(0xff), uint16(fuzzMaxPayload))
	f.Add([]byte("a:b:c"), []byte("1:"), byte(':'), uint16(fuzzMaxPayload+1))
	f.Add([]byte("{x}:pending"), []byte("*"), byte('}'), uint16(0))
	srv := redistest.Start(f)
	rdb := srv.Client(f)
	prefix := testPrefix(f)
	q := newQueue(f, rdb, "payloads", queue.Config{MaxPayload: fuzzMaxPayload, ResultRetention: time.Minute})
	nb := newNeighbours(f, rdb, prefix)

	f.Fuzz(func(t *testing.T, a, b []byte, fill byte, bigLen uint16) {
		ctx := fuzzContext(t)
		big := bytes.Repeat([]byte{fill}, int(bigLen)%(fuzzMaxPayload+64))
		payloads := [][]byte{a, b, big}

		// One by one: each is accepted or refused on its own merits.
		var want [][]byte
		var ids []string
		for i, p := range payloads {
			id, err := q.Enqueue(ctx, p)
			if werr := payloadErr(p); werr != nil {
				if !errors.Is(err, werr) || id != "" {
					t.Fatalf("Enqueue(payload %d of %d bytes) = %q, %v; want %v", i, len(p), id, err, werr)
				}
				continue
			}
			if err != nil || id == "" {
				t.Fatalf("Enqueue(payload %d of %d bytes) = %q, %v", i, len(p), id, err)
			}
			want, ids = append(want, p), append(ids, id)
		}
		// As a batch: all or nothing.
		batchIDs, err := q.EnqueueBatch(ctx, payloads)
		var wantErrs []error
		for _, p := range payloads {
			if werr := payloadErr(p); werr != nil {
				wantErrs = append(wantErrs, werr)
			}
		}
		switch {
		case len(wantErrs) > 0:
			if batchIDs != nil || !errors.Is(err, wantErrs[0]) && !errors.Is(err, wantErrs[len(wantErrs)-1]) {
				t.Fatalf("EnqueueBatch = %v, %v; want no ids and one of %v", batchIDs, err, wantErrs)
			}
		case err != nil || len(batchIDs) != len(payloads):
			t.Fatalf("EnqueueBatch = %v, %v; want %d ids", batchIDs, err, len(payloads))
		default:
			want, ids = append(want, payloads...), append(ids, batchIDs...)
		}
		if s := mustDepth(t, q); s.Pending != int64(len(ids)) {
			t.Fatalf("after enqueueing %d items: %+v", len(ids), s)
		}
		for i, id := range ids {
			if v, err := q.Value(ctx, id); err != nil || !bytes.Equal(v, want[i]) {
				t.Fatalf("Value(item %d) = %q, %v; want %q", i, v, err, want[i])
			}
		}

		items, err := q.Claim(ctx, queue.BatchMax)
		if err != nil || len(items) != len(ids) {
			t.Fatalf("Claim = %d items, %v; want %d", len(items), err, len(ids))
		}
		for i, it := range items {
			if it.ID != ids[i] || !bytes.Equal(it.Payload, want[i]) || it.Attempt != 1 || it.Token == "" {
				t.Fatalf("claimed item %d = %+v; want id %s, payload %q, attempt 1", i, it, ids[i], want[i])
			}
			if i == 0 {
				// A result past MaxPayload is refused and changes nothing.
				err := q.Ack(ctx, it, make([]byte, fuzzMaxPayload+1))
				if !errors.Is(err, queue.ErrPayloadTooLarge) {
					t.Fatalf("Ack with an oversized result: %v, want ErrPayloadTooLarge", err)
				}
			}
			// The payload is also the result: results round-trip too.
			if err := q.Ack(ctx, it, it.Payload); err != nil {
				t.Fatalf("Ack(item %d): %v", i, err)
			}
		}
		for i, id := range ids {
			if r, err := q.Result(ctx, id); err != nil || !bytes.Equal(r, want[i]) {
				t.Fatalf("Result(item %d) = %q, %v; want %q", i, r, err, want[i])
			}
			if r, err := q.Wait(ctx, id); err != nil || !bytes.Equal(r, want[i]) {
				t.Fatalf("Wait(item %d) = %q, %v; want %q", i, r, err, want[i])
			}
			if _, err := q.Value(ctx, id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("Value(item %d) after its Ack: %v, want ErrNotFound", i, err)
			}
		}
		wantCounts(t, q, queue.Depth{}) // nothing left behind for the next input
		nb.check(t, ctx)
	})
}

// idWorld is a queue holding one item in each state, for FuzzIDs: pending,
// leased (for an hour), acked with a result and dead.
type idWorld struct {
	q                    *queue.Queue
	pending, leased      queue.Item
	done, dead           queue.Item
	payloads             map[string]string // id → payload, of the items with a value
	doneResult, deadNote string
}

func newIDWorld(f *testing.F, rdb redis.UniversalClient) *idWorld {
	ctx := context.Background()
	w := &idWorld{
		q:          newQueue(f, rdb, "ids", queue.Config{Lease: time.Hour, MaxAttempts: 1}),
		doneResult: "ok:42", // a colon, as in the stored "token:result"
		deadNote:   "dead on purpose",
	}
	ids := mustEnqueue(f, w.q, "done", "dead", "leased", "pending")
	items := mustClaim(f, w.q, 3, 3)
	w.done, w.dead, w.leased = items[0], items[1], items[2]
	w.pending = queue.Item{ID: ids[3]}
	if err := w.q.Ack(ctx, w.done, []byte(w.doneResult)); err != nil {
		f.Fatal(err)
	}
	if err := w.q.Nack(ctx, w.dead, errors.New(w.deadNote)); err != nil {
		f.Fatal(err)
	}
	w.payloads = map[string]string{w.pending.ID: "pending", w.leased.ID: "leased", w.dead.ID: "dead"}
	return w
}

// check proves that the world is as newIDWorld left it.
func (w *idWorld) check(t *testing.T, ctx context.Context) {
	t.Helper()
	wantCounts(t, w.q, queue.Depth{Pending: 1, Leased: 1, Dead: 1})
	for id, p := range w.payloads {
		if v, err := w.q.Value(ctx, id); err != nil || string(v) != p {
			t.Fatalf("Value(%s) = %q, %v; want %q", id, v, err, p)
		}
	}
	if r, err := w.q.Result(ctx, w.done.ID); err != nil || string(r) != w.doneResult {
		t.Fatalf("Result of the acked item = %q, %v; want %q", r, err, w.doneResult)
	}
	if _, err := w.q.Wait(ctx, w.dead.ID); !errors.Is(err, queue.ErrDead) || !strings.Contains(err.Error(), w.deadNote) {
		t.Fatalf("Wait on the dead item: %v, want ErrDead with its cause", err)
	}
}

// FuzzIDs: Ack, Nack, Extend, Release, Settle, Value, Result and Wait with
// any id and token (empty, braces, '*', a colon, other keys' names, huge,
// or a real item's id with a forged token) give ErrInvalidArgument,
// ErrNotFound or ErrLeaseLost, and change no item.
func FuzzIDs(f *testing.F) {
	f.Add(uint8(0), "", "", int64(0))
	f.Add(uint8(0), "{", "}", int64(time.Second))
	f.Add(uint8(0), "*", "*", int64(-1))
	f.Add(uint8(0), "pending", "1", int64(time.Millisecond))
	f.Add(uint8(0), "}:values", "2", int64(1<<62))
	f.Add(uint8(1), "", "1", int64(time.Minute))
	f.Add(uint8(2), "", "999", int64(time.Hour))
	f.Add(uint8(3), "", "2", int64(time.Second))
	f.Add(uint8(4), "", "3", int64(time.Second))
	f.Add(uint8(4), "", "1", int64(time.Second)) // the dead item's bare count
	f.Add(uint8(5), ":x", "3", int64(time.Second))
	f.Add(uint8(0), strings.Repeat("{}:*", 1<<14), strings.Repeat("9", 1<<12), int64(time.Second))
	srv := redistest.Start(f)
	rdb := srv.Client(f)
	w := newIDWorld(f, rdb)

	f.Fuzz(func(t *testing.T, pick uint8, id, token string, d int64) {
		ctx := fuzzContext(t)
		// pick aims the input at a real item, or at a look-alike of one.
		switch pick % 6 {
		case 1:
			id = w.pending.ID
		case 2:
			id = w.leased.ID
		case 3:
			id = w.done.ID
		case 4:
			id = w.dead.ID
		case 5:
			id = w.leased.ID + id
		}
		if id == w.leased.ID && token == w.leased.Token || id == w.done.ID && token == w.done.Token {
			return // the real claims: not a forgery
		}
		it := queue.Item{ID: id, Token: token, Attempt: int(d % 1000), Payload: []byte("forged")}
		invalid := id == "" || token == ""
		wantSettle := func(op string, err error) {
			t.Helper()
			switch {
			case invalid && !errors.Is(err, queue.ErrInvalidArgument):
				t.Fatalf("%s(id %.40q, token %.40q): %v, want ErrInvalidArgument", op, id, token, err)
			case !invalid && !errors.Is(err, queue.ErrLeaseLost):
				t.Fatalf("%s(id %.40q, token %.40q): %v, want ErrLeaseLost", op, id, token, err)
			}
		}
		wantSettle("Ack", w.q.Ack(ctx, it, []byte("forged result")))
		wantSettle("Nack", w.q.Nack(ctx, it, errors.New("forged cause")))
		_, err := w.q.Extend(ctx, it, time.Duration(d))
		if !invalid && d < int64(time.Millisecond) {
			if !errors.Is(err, queue.ErrInvalidArgument) || !strings.Contains(err.Error(), "Extend") {
				t.Fatalf("Extend by %v: %v, want ErrInvalidArgument naming Extend", time.Duration(d), err)
			}
		} else {
			wantSettle("Extend", err)
		}
		n, err := w.q.Release(ctx, it)
		if invalid != errors.Is(err, queue.ErrInvalidArgument) || !invalid && (err != nil || n != 0) {
			t.Fatalf("Release(id %.40q, token %.40q) = %d, %v", id, token, n, err)
		}
		s, err := w.q.Settle(ctx, queue.Settlement{Item: it, Result: []byte("r")}, queue.Settlement{Item: it, Err: errors.New("e")})
		if invalid != errors.Is(err, queue.ErrInvalidArgument) || !invalid && (err != nil || len(s.Lost) != 2 || s.Acked+s.Retried+s.Dead != 0) {
			t.Fatalf("Settle(id %.40q, token %.40q) = %+v, %v; want both lost", id, token, s, err)
		}

		// The readers: the real items' own answers, else not found.
		v, err := w.q.Value(ctx, id)
		p, real := w.payloads[id]
		switch {
		case id == "":
			wantErr(t, err, queue.ErrInvalidArgument, "Value(\"\")")
		case real:
			if err != nil || string(v) != p {
				t.Fatalf("Value(%s) = %q, %v; want %q", id, v, err, p)
			}
		default:
			wantErr(t, err, queue.ErrNotFound, fmt.Sprintf("Value(%.40q)", id))
		}
		r, err := w.q.Result(ctx, id)
		switch {
		case id == "":
			wantErr(t, err, queue.ErrInvalidArgument, "Result(\"\")")
		case id == w.done.ID:
			if err != nil || string(r) != w.doneResult {
				t.Fatalf("Result(done) = %q, %v", r, err)
			}
		default: // in particular, no forged Ack stored a result
			wantErr(t, err, queue.ErrNotFound, fmt.Sprintf("Result(%.40q)", id))
		}
		if id != w.pending.ID && id != w.leased.ID { // those would block
			r, err := w.q.Wait(ctx, id)
			switch {
			case id == "":
				wantErr(t, err, queue.ErrInvalidArgument, "Wait(\"\")")
			case id == w.done.ID:
				if err != nil || string(r) != w.doneResult {
					t.Fatalf("Wait(done) = %q, %v", r, err)
				}
			case id == w.dead.ID:
				wantErr(t, err, queue.ErrDead, "Wait(dead)")
			default:
				wantErr(t, err, queue.ErrNotFound, fmt.Sprintf("Wait(%.40q)", id))
			}
		}
		w.check(t, ctx)
	})
}

// FuzzNew: New accepts exactly the names and prefixes of 1 to 128 bytes of
// [A-Za-z0-9._-], and every key of an accepted queue carries the hash tag
// {PREFIX:q:NAME} whole: no ':' or brace in a name can move a key out of
// its prefix or off its queue's cluster slot.
func FuzzNew(f *testing.F) {
	for _, s := range [][2]string{
		{"jobs", ""}, {"a", "b"}, {"", "p"}, {"a:b", "p"}, {"x", "p}:{q"}, {"{x}", "p"},
		{"x}", "{p"}, {"*", "p"}, {"tidé", "p"}, {strings.Repeat("n", 128), strings.Repeat("p", 128)},
		{strings.Repeat("n", 129), "p"}, {"n", strings.Repeat("p", 129)}, {"a\x00b", "p"},
	} {
		f.Add(s[0], s[1])
	}
	srv := redistest.Start(f)
	rdb := srv.Client(f)

	f.Fuzz(func(t *testing.T, name, prefix string) {
		ctx := fuzzContext(t)
		q, err := queue.New(rdb, name, queue.Config{Prefix: prefix})
		switch {
		case !validName(name):
			if q != nil || !errors.Is(err, queue.ErrInvalidName) {
				t.Fatalf("New(%.40q) = %v, %v; want ErrInvalidName", name, q, err)
			}
			return
		case prefix != "" && !validName(prefix):
			if q != nil || !errors.Is(err, queue.ErrInvalidConfig) || !strings.Contains(err.Error(), "Prefix") {
				t.Fatalf("New(prefix %.40q) = %v, %v; want ErrInvalidConfig naming Prefix", prefix, q, err)
			}
			return
		case err != nil:
			t.Fatalf("New(%q, prefix %q): %v", name, prefix, err)
		}
		if q.Name() != name || q.Config().Prefix != cmp.Or(prefix, "worksteal") {
			t.Fatalf("New(%q, prefix %q) has name %q, prefix %q", name, prefix, q.Name(), q.Config().Prefix)
		}
		// Write something into each kind of key: pending, leased, acked.
		ids := mustEnqueue(t, q, "a", "b")
		items := mustClaim(t, q, 1, 1)
		if err := q.Ack(ctx, items[0], []byte("r")); err != nil {
			t.Fatal(err)
		}
		keys, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		tag := q.Config().Prefix + ":q:" + name
		for _, k := range keys {
			if redistest.HashTag(k) != tag || !strings.HasPrefix(k, "{"+tag+"}") {
				t.Fatalf("queue %q, prefix %q wrote key %q, outside its hash tag {%s}", name, prefix, k, tag)
			}
		}
		if len(keys) == 0 || len(ids) != 2 {
			t.Fatalf("queue %q wrote no keys", name)
		}
		if err := rdb.FlushDB(ctx).Err(); err != nil { // a clean server for the next input
			t.Fatal(err)
		}
	})
}

// validName is the documented rule, written independently of names.Check.
func validName(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", rune(c)) {
			return false
		}
	}
	return true
}
