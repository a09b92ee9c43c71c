package queue_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/queue"
)

type waitResult struct {
	result []byte
	err    error
	at     time.Time
}

func goWait(ctx context.Context, q *queue.Queue, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		r, err := q.Wait(ctx, id)
		ch <- waitResult{r, err, time.Now()}
	}()
	return ch
}

// blockedClients waits until Redis reports n clients in a blocking call.
func blockedClients(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	eventually(t, 10*time.Second, strconv.Itoa(n)+" blocked clients", func() bool {
		info, err := rdb.Info(context.Background(), "clients").Result()
		return err == nil && strings.Contains(info, "blocked_clients:"+strconv.Itoa(n)+"\r\n")
	})
}

func receive(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return waitResult{}
	}
}

// Wait returns as soon as the item is acked: well within WaitBlock, so it
// was woken, not polling. Every waiter of the item wakes.
func TestWaitReturnsOnAck(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{WaitBlock: time.Minute})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "question")[0]
	waiters := []<-chan waitResult{goWait(ctx, b.q, id), goWait(ctx, b.q, id), goWait(ctx, b.q, id)}
	blockedClients(t, b.rdb, 3)
	it := mustClaim(t, b.q, 1, 1)[0]
	acked := time.Now()
	if err := b.q.Ack(ctx, it, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	for i, ch := range waiters {
		r := receive(t, ch)
		if string(r.result) != "answer" || r.err != nil {
			t.Fatalf("waiter %d: Wait = %q, %v; want answer", i, r.result, r.err)
		}
		if d := r.at.Sub(acked); d > 2*time.Second {
			t.Fatalf("waiter %d returned %v after the Ack, want at once", i, d)
		}
	}
	// Once done, Wait answers from the stored result without blocking.
	if r, err := b.q.Wait(ctx, id); string(r) != "answer" || err != nil {
		t.Fatalf("Wait after the Ack = %q, %v", r, err)
	}
}

func TestWaitWakesOnDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{WaitBlock: time.Minute, MaxAttempts: 1})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "doomed")[0]
	ch := goWait(ctx, b.q, id)
	blockedClients(t, b.rdb, 1)
	if err := b.q.Nack(ctx, mustClaim(t, b.q, 1, 1)[0], errors.New("disk full")); err != nil {
		t.Fatal(err)
	}
	r := receive(t, ch)
	if !errors.Is(r.err, queue.ErrDead) || !strings.Contains(r.err.Error(), "disk full") {
		t.Fatalf("Wait = %v, want ErrDead with the cause", r.err)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{WaitBlock: time.Second})
	id := mustEnqueue(t, b.q, "never done")[0]

	// A deadline ends the blocking read itself (the test client has
	// ContextTimeoutEnabled), long before WaitBlock.
	dctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.q.Wait(dctx, id)
	wantErr(t, err, context.DeadlineExceeded, "Wait past its deadline")
	if d := time.Since(start); d < 150*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("Wait with a 150ms deadline returned after %v", d)
	}

	// A cancellation is seen within WaitBlock.
	cctx, cancelWait := context.WithCancel(context.Background())
	ch := goWait(cctx, b.q, id)
	blockedClients(t, b.rdb, 1)
	cancelWait()
	cancelled := time.Now()
	r := receive(t, ch)
	wantErr(t, r.err, context.Canceled, "Wait after cancel")
	if d := r.at.Sub(cancelled); d > 2*time.Second {
		t.Fatalf("Wait returned %v after cancel, want within WaitBlock (1s)", d)
	}
	if v, err := b.q.Value(context.Background(), id); string(v) != "never done" || err != nil {
		t.Fatalf("the item changed: %q, %v", v, err)
	}
}

func TestWaitOnUnknownIDIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	_, err := b.q.Wait(testContext(t), "no-such-id")
	wantErr(t, err, queue.ErrNotFound, "Wait on an unknown id")
}

// A result lives for ResultRetention after the Ack, then it is gone.
func TestResultRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{ResultRetention: 50 * time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "x")[0]
	if err := b.q.Ack(ctx, mustClaim(t, b.q, 1, 1)[0], []byte("r")); err != nil {
		t.Fatal(err)
	}
	ttl, err := b.rdb.PTTL(ctx, tagOf(b.q)+":result:"+id).Result()
	if err != nil || ttl <= 0 || ttl > 50*time.Millisecond {
		t.Fatalf("result TTL %v (%v), want up to 50ms", ttl, err)
	}
	eventually(t, 5*time.Second, "the result expired", func() bool {
		_, err := b.q.Result(ctx, id)
		return errors.Is(err, queue.ErrNotFound)
	})
}
