package qstore

import (
	"context"
	"testing"

	"github.com/worksteal/worksteal/internal/redistest"
)

// The keys that scripts fill and empty by whole batches stay out of
// Redis's listpack encoding, whose lookups scan the key (see encodingPin):
// a regression here costs no correctness, only half the throughput, so it
// is checked on its own.
func TestBatchKeysLeaveListpackEncoding(t *testing.T) {
	t.Parallel()
	if len(encodingPin) <= 64 {
		t.Fatalf("encodingPin has %d bytes, want more than Redis's default listpack bound of 64", len(encodingPin))
	}
	rdb := redistest.Start(t).Client(t)
	q := testStore(rdb, "enc", Config{Prefix: "t-enc"})
	ctx := context.Background()
	if _, err := q.EnqueueBatch(ctx, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, 2)
	if err != nil || len(items) != 2 {
		t.Fatalf("Claim = %v, %v", items, err)
	}
	if err := q.Ack(ctx, items[0], []byte("r")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		q.k.values: "hashtable", q.k.attempts: "hashtable",
		q.k.results: "hashtable", q.k.leases: "skiplist",
	} {
		if got, err := rdb.ObjectEncoding(ctx, key).Result(); got != want || err != nil {
			t.Errorf("OBJECT ENCODING %s = %q, %v; want %q", key, got, err, want)
		}
	}
	// The pin is no item: one lease is left, and nothing pending.
	s, err := q.Depth(ctx)
	if err != nil || s.Leased != 1 || s.Pending != 0 || s.Expired != 0 {
		t.Fatalf("Depth = %+v, %v; want 1 leased", s, err)
	}
}

// enqueueone.lua writes the pin rather than being sent it: the same text,
// in values and limits, on a queue that had no key before.
func TestEnqueueOneWritesTheEncodingPin(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	q := testStore(rdb, "enc", Config{Prefix: "t-enc-one"})
	ctx := context.Background()
	if _, _, err := q.EnqueueWith(ctx, []byte("a"), EnqueueOptions{MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{q.k.values, q.k.limits} {
		if pin, err := rdb.HGet(ctx, key, "").Result(); pin != encodingPin || err != nil {
			t.Errorf("HGET %s \"\" = %q, %v; want encodingPin", key, pin, err)
		}
		if got, err := rdb.ObjectEncoding(ctx, key).Result(); got != "hashtable" || err != nil {
			t.Errorf("OBJECT ENCODING %s = %q, %v; want hashtable", key, got, err)
		}
	}
}
