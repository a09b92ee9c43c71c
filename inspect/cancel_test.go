package inspect_test

import (
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// Cancel finds the queue that holds the id, keeps the canceled record for
// that queue's ResultRetention as the registry has it, and tells pending
// from leased, canceled before, finished and unknown.
func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	b.queue(t, "other", queue.Config{})
	q := b.queue(t, "work", queue.Config{ResultRetention: 2 * time.Hour})
	leased, err := q.Enqueue(ctx, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := q.Enqueue(ctx, []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	if items, err := q.Claim(ctx, 1); err != nil || len(items) != 1 || items[0].ID != leased {
		t.Fatalf("Claim = %+v, %v", items, err)
	}
	if r, err := b.in.Cancel(ctx, "", waiting); err != nil || r != (inspect.Canceled{Queue: "work", Items: 1}) {
		t.Fatalf("Cancel of a pending item = %+v, %v", r, err)
	}
	if r, err := b.in.Cancel(ctx, "work", leased); err != nil || r != (inspect.Canceled{Queue: "work", Items: 1, Running: 1}) {
		t.Fatalf("Cancel of a leased item = %+v, %v", r, err)
	}
	if r, err := b.in.Cancel(ctx, "", leased); err != nil || r != (inspect.Canceled{Queue: "work"}) {
		t.Fatalf("a second Cancel = %+v, %v; want nothing canceled, no error", r, err)
	}
	kept, err := b.rdb.ZScore(ctx, "{"+b.prefix+":q:work}:canceled", leased).Result()
	now, _ := b.rdb.Time(ctx).Result()
	if left := time.UnixMilli(int64(kept)).Sub(now); err != nil || left < time.Hour || left > 2*time.Hour {
		t.Fatalf("canceled record kept %v more, %v; want the queue's ResultRetention, 2h", left, err)
	}
	if _, err := q.Wait(ctx, leased); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Wait = %v, want queue.ErrCanceled", err)
	}
	done, err := q.Enqueue(ctx, []byte("d"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, 1)
	if err != nil || len(items) != 1 {
		t.Fatalf("Claim = %+v, %v", items, err)
	}
	if err := q.Ack(ctx, items[0], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.in.Cancel(ctx, "", done); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("Cancel of an acked item = %v, want queue.ErrFinished", err)
	}
	if _, err := b.in.Cancel(ctx, "", "nosuch"); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("Cancel of an unknown id = %v, want ErrNotFound", err)
	}
	if _, err := b.in.Cancel(ctx, "nosuch", leased); !errors.Is(err, inspect.ErrUnknownQueue) {
		t.Fatalf("Cancel in an unknown queue = %v, want ErrUnknownQueue", err)
	}
	if _, err := b.in.Cancel(ctx, "work", ""); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Fatalf("Cancel of an empty id = %v, want ErrInvalidArgument", err)
	}
}
