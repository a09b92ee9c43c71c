package queue

import (
	"context"
	"testing"

	"github.com/worksteal/worksteal/internal/redistest"
)

// A resent enqueue script call (the client retries after a lost reply)
// names the same ids, so it adds nothing twice.
func TestEnqueueScriptIsIdempotent(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	q, err := New(rdb, "idem", Config{Prefix: "t-idem"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := []any{encodingPin, newID(), "a", newID(), "b"}
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
