package queue_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// The cases of New that config_test.go does not cover: prefixes that are
// too long or hold a separator, and a BackoffMax below its default base.
func TestNewRejectsMorePrefixesAndBackoffs(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tc := range []struct {
		name  string
		cfg   queue.Config
		field string
	}{
		{"prefix with a colon", queue.Config{Prefix: "app:q"}, "Prefix"},
		{"prefix too long", queue.Config{Prefix: strings.Repeat("p", 129)}, "Prefix"},
		{"prefix with a NUL", queue.Config{Prefix: "a\x00"}, "Prefix"},
		{"prefix glob", queue.Config{Prefix: "*"}, "Prefix"},
		{"backoff max below the default base", queue.Config{BackoffMax: time.Millisecond}, "BackoffMax"},
		{"negative backoff max", queue.Config{BackoffMax: -time.Second}, "BackoffMax"},
		{"negative wait block", queue.Config{WaitBlock: -time.Second}, "WaitBlock"},
		{"most negative lease", queue.Config{Lease: math.MinInt64}, "Lease"},
		{"most negative max payload", queue.Config{MaxPayload: math.MinInt}, "MaxPayload"},
		{"most negative max attempts", queue.Config{MaxAttempts: math.MinInt}, "MaxAttempts"},
		{"sub-ms retention", queue.Config{ResultRetention: time.Microsecond}, "ResultRetention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, err := queue.New(rdb, "q", tc.cfg)
			if q != nil || !errors.Is(err, queue.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New(%+v) = %v, %v; want ErrInvalidConfig naming %s", tc.cfg, q, err, tc.field)
			}
		})
	}
	for _, name := range []string{"*", "a b", "a\x00b", "\xff", "q:pending"} {
		if q, err := queue.New(rdb, name, queue.Config{}); q != nil || !errors.Is(err, queue.ErrInvalidName) {
			t.Errorf("New(%q) = %v, %v; want ErrInvalidName", name, q, err)
		}
	}
}

// Every method's invalid arguments give ErrInvalidArgument with a message
// naming the argument, before any Redis call; and a batch with one invalid
// item changes nothing, its valid items included.
func TestMethodsNameTheirInvalidArguments(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	mustEnqueue(t, b.q, "a")
	claimed := mustClaim(t, b.q, 1, 1)[0]
	unclaimed := queue.Item{ID: claimed.ID}
	for _, tc := range []struct {
		name, says string
		call       func() error
	}{
		{"Claim 0", "Claim n 0", func() error { _, err := b.q.Claim(ctx, 0); return err }},
		{"Claim past BatchMax", "Claim n 1001", func() error { _, err := b.q.Claim(ctx, queue.BatchMax+1); return err }},
		{"Claim most negative", "Claim n", func() error { _, err := b.q.Claim(ctx, math.MinInt); return err }},
		{"Extend zero", "Extend by 0s", func() error { _, err := b.q.Extend(ctx, claimed, 0); return err }},
		{"Extend negative", "below 1ms", func() error { _, err := b.q.Extend(ctx, claimed, math.MinInt64); return err }},
		{"Extend unclaimed", "no id or token", func() error { _, err := b.q.Extend(ctx, unclaimed, time.Second); return err }},
		{"Release unclaimed", "no id or token", func() error { _, err := b.q.Release(ctx, claimed, unclaimed); return err }},
		{"Settle unclaimed", "no id or token", func() error {
			_, err := b.q.Settle(ctx, queue.Settlement{Item: claimed, Result: []byte("r")}, queue.Settlement{Item: unclaimed})
			return err
		}},
		{"Ack without id", "no id or token", func() error { return b.q.Ack(ctx, queue.Item{Token: claimed.Token}, nil) }},
		{"Value", "empty id", func() error { _, err := b.q.Value(ctx, ""); return err }},
		{"Result", "empty id", func() error { _, err := b.q.Result(ctx, ""); return err }},
		{"Wait", "empty id", func() error { _, err := b.q.Wait(ctx, ""); return err }},
	} {
		err := tc.call()
		if !errors.Is(err, queue.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want ErrInvalidArgument saying %q", tc.name, err, tc.says)
		}
	}
	// The refused Release and Settle did not touch the valid item beside
	// the invalid one: it is still leased, under the same claim.
	wantCounts(t, b.q, queue.Depth{Leased: 1})
	if err := b.q.Ack(ctx, claimed, []byte("r")); err != nil {
		t.Fatalf("Ack after the refused batches: %v", err)
	}
}

// Empty batches are no-ops, not errors; and the default MaxPayload (1 MiB)
// is the bound, inclusive, for payloads and results alike.
func TestEmptyBatchesAndTheDefaultPayloadBound(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if ids, err := b.q.EnqueueBatch(ctx, nil); err != nil || len(ids) != 0 {
		t.Fatalf("EnqueueBatch(nil) = %v, %v; want no ids, no error", ids, err)
	}
	if s, err := b.q.Settle(ctx); err != nil || s.Acked+s.Retried+s.Dead+len(s.Lost) != 0 {
		t.Fatalf("Settle() = %+v, %v", s, err)
	}
	if n, err := b.q.Release(ctx); n != 0 || err != nil {
		t.Fatalf("Release() = %d, %v", n, err)
	}
	wantCounts(t, b.q, queue.Depth{})

	limit := bytes.Repeat([]byte{0xff}, 1<<20) // the default MaxPayload
	_, err := b.q.Enqueue(ctx, append(limit, 0))
	wantErr(t, err, queue.ErrPayloadTooLarge, "Enqueue of the default MaxPayload + 1 bytes")
	if !strings.Contains(err.Error(), "MaxPayload 1048576") {
		t.Fatalf("error %q does not name MaxPayload", err)
	}
	id, err := b.q.Enqueue(ctx, limit)
	if err != nil {
		t.Fatalf("Enqueue of exactly the default MaxPayload: %v", err)
	}
	it := mustClaim(t, b.q, 1, 1)[0]
	if it.ID != id || !bytes.Equal(it.Payload, limit) {
		t.Fatalf("claimed %s with %d bytes, want %s with %d", it.ID, len(it.Payload), id, len(limit))
	}
	wantErr(t, b.q.Ack(ctx, it, append(limit, 0)), queue.ErrPayloadTooLarge, "Ack with a result of the default MaxPayload + 1 bytes")
	if err := b.q.Ack(ctx, it, limit); err != nil {
		t.Fatalf("Ack with a result of exactly the default MaxPayload: %v", err)
	}
	if r, err := b.q.Result(ctx, id); err != nil || !bytes.Equal(r, limit) {
		t.Fatalf("Result = %d bytes, %v; want %d", len(r), err, len(limit))
	}
}

// An Ack resent by the claim that acked is harmless (Settle's doc); but an
// Ack with any other token is a lost lease, even one that starts like the
// stored "token:result". Found by FuzzIDs (testdata/fuzz/FuzzIDs/
// forged-token-with-colon) at 60d3929, whose settle.lua compared the stored
// value's first len(token)+1 bytes with token..':', so that the token
// "1:ok" matched the stored "1:ok:42" of claim "1" with result "ok:42".
func TestAckWithAForgedTokenIsLeaseLost(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	mustEnqueue(t, b.q, "x")
	it := mustClaim(t, b.q, 1, 1)[0]
	if err := b.q.Ack(ctx, it, []byte("ok:42")); err != nil {
		t.Fatal(err)
	}
	if err := b.q.Ack(ctx, it, []byte("ok:42")); err != nil {
		t.Fatalf("the same claim's Ack, resent: %v, want nil", err)
	}
	for _, token := range []string{it.Token + ":ok", it.Token + ":", "ok", it.Token + "0"} {
		forged := queue.Item{ID: it.ID, Token: token}
		err := b.q.Ack(ctx, forged, []byte("ok:42"))
		if !errors.Is(err, queue.ErrLeaseLost) {
			t.Errorf("Ack with the forged token %q (the claim's is %q): %v, want ErrLeaseLost", token, it.Token, err)
		}
	}
	if r, err := b.q.Result(ctx, it.ID); err != nil || string(r) != "ok:42" {
		t.Fatalf("Result = %q, %v; want the claim's own", r, err)
	}
}

// An item that is not leased keeps its bare attempt count where a leased
// one keeps its token; that count, sent as a token, is no claim. Found by
// FuzzIDs in CI: the token "1" matched the dead item's count "1", and Ack
// deleted the dead letter's value.
func TestBareAttemptCountIsNoToken(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, BackoffBase: time.Hour, BackoffMax: time.Hour})
	ctx := testContext(t)
	ids := mustEnqueue(t, b.q, "delayed", "dead")
	first := mustClaim(t, b.q, 2, 2)
	for _, it := range first {
		if err := b.q.Nack(ctx, it, errors.New("first")); err != nil {
			t.Fatal(err)
		}
	}
	// The second item's retry is made due at once, claimed and nacked
	// again: dead at attempt 2. The first waits an hour, at count 1.
	if err := b.rdb.ZAdd(ctx, tagOf(b.q)+":delayed", redis.Z{Score: 0, Member: ids[1]}).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := qstore.Of(b.q).Promote(ctx, 10); err != nil || n != 1 {
		t.Fatalf("Promote = %d, %v; want 1", n, err)
	}
	if err := b.q.Nack(ctx, mustClaim(t, b.q, 1, 1)[0], errors.New("second")); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, queue.Depth{Delayed: 1, Dead: 1})
	for i, count := range []string{"1", "2"} {
		forged := queue.Item{ID: ids[i], Token: count, Attempt: i + 1}
		if err := b.q.Ack(ctx, forged, []byte("r")); !errors.Is(err, queue.ErrLeaseLost) {
			t.Errorf("Ack with the bare count %q: %v, want ErrLeaseLost", count, err)
		}
		if err := b.q.Nack(ctx, forged, errors.New("forged")); !errors.Is(err, queue.ErrLeaseLost) {
			t.Errorf("Nack with the bare count %q: %v, want ErrLeaseLost", count, err)
		}
		if _, err := b.q.Extend(ctx, forged, time.Minute); !errors.Is(err, queue.ErrLeaseLost) {
			t.Errorf("Extend with the bare count %q: %v, want ErrLeaseLost", count, err)
		}
		if n, err := b.q.Release(ctx, forged); n != 0 || err != nil {
			t.Errorf("Release with the bare count %q = %d, %v; want 0, nil", count, n, err)
		}
	}
	wantCounts(t, b.q, queue.Depth{Delayed: 1, Dead: 1})
	for i, want := range []string{"delayed", "dead"} {
		if v, err := b.q.Value(ctx, ids[i]); err != nil || string(v) != want {
			t.Errorf("Value(%s) = %q, %v; want %q", ids[i], v, err, want)
		}
	}
}

// A WaitBlock far past any sensible value is accepted by New; Wait must
// then still work: Redis takes the blocking timeout, and an Ack wakes it.
func TestHugeWaitBlockStillWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{WaitBlock: math.MaxInt64})
	// No deadline: the blocking read's timeout is WaitBlock itself.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	id := mustEnqueue(t, b.q, "x")[0]
	waited := goWait(ctx, b.q, id)
	blockedClients(t, b.rdb, 1)
	it := mustClaim(t, b.q, 1, 1)[0]
	if err := b.q.Ack(ctx, it, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, waited); r.err != nil || string(r.result) != "r" {
		t.Fatalf("Wait with WaitBlock %v = %q, %v; want the result", time.Duration(math.MaxInt64), r.result, r.err)
	}
}
