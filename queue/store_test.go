package queue_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// The queue is a face of its storage (internal/qstore): its bound is the
// one the scripts keep, and its errors are the ones the storage returns,
// to jobs and tasks too.
func TestTheQueueIsItsStoragesFace(t *testing.T) {
	t.Parallel()
	if queue.BatchMax != qstore.BatchMax {
		t.Errorf("queue.BatchMax = %d, the storage's %d", queue.BatchMax, qstore.BatchMax)
	}
	for _, c := range []struct{ face, store error }{
		{queue.ErrInvalidArgument, qstore.ErrInvalidArgument},
		{queue.ErrEmptyPayload, qstore.ErrEmptyPayload},
		{queue.ErrPayloadTooLarge, qstore.ErrPayloadTooLarge},
		{queue.ErrLeaseLost, qstore.ErrLeaseLost},
		{queue.ErrNotFound, qstore.ErrNotFound},
		{queue.ErrDead, qstore.ErrDead},
	} {
		if c.face != c.store {
			t.Errorf("%v is not the storage's %v", c.face, c.store)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // New makes no call
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, "face", queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if st := qstore.Of(q); st == nil || st.Name() != "face" || st.Config().Lease != q.Config().Lease {
		t.Fatalf("qstore.Of(q) = %+v, want the store of queue face", st)
	}
}
