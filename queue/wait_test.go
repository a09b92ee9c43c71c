package queue_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
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
	testrig.Eventually(t, 10*time.Second, strconv.Itoa(n)+" blocked clients", func() bool {
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

// A result lives for ResultRetention after the Ack (by Redis's clock), then
// it is gone.
func TestResultRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{ResultRetention: 50 * time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "x")[0]
	it := mustClaim(t, b.q, 1, 1)[0]
	before := redisNow(t, b.rdb)
	if err := b.q.Ack(ctx, it, []byte("r")); err != nil {
		t.Fatal(err)
	}
	after := redisNow(t, b.rdb)
	stored, err := b.rdb.HGet(ctx, tagOf(b.q)+":results", id).Result()
	if err != nil {
		t.Fatal(err)
	}
	at, rest, _ := strings.Cut(stored, ":")
	ms, err := strconv.ParseInt(at, 10, 64)
	if expiry := time.UnixMilli(ms); err != nil || expiry.Before(before.Add(49*time.Millisecond)) || expiry.After(after.Add(51*time.Millisecond)) {
		t.Fatalf("stored %q: expiry %v, want the Ack's Redis time + 50ms", stored, expiry)
	}
	if rest != it.Token+":r" {
		t.Fatalf("stored %q, want expiry:%s:r", stored, it.Token)
	}
	if r, err := b.q.Result(ctx, id); string(r) != "r" || err != nil {
		// Only if Redis's clock has not yet passed the expiry.
		if now := redisNow(t, b.rdb); now.Before(time.UnixMilli(ms)) {
			t.Fatalf("Result = %q, %v before the expiry", r, err)
		}
	}
	untilRedisTime(t, b.rdb, time.UnixMilli(ms))
	_, err = b.q.Result(ctx, id)
	wantErr(t, err, queue.ErrNotFound, "Result past the retention")
	_, err = b.q.Wait(ctx, id)
	wantErr(t, err, queue.ErrNotFound, "Wait past the retention")
}

// Expired results are dropped by the next Settle or Tidy, even while
// younger results keep the results hash alive; once the queue is idle, the
// results go as a whole.
func TestExpiredResultsAreDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	// Each queue is shared by a process keeping results for 50ms and one
	// keeping them for an hour, which keeps the results hash from expiring.
	handles := func(name string) (short, long *queue.Queue, tag string) {
		short = newQueue(t, b.rdb, name, queue.Config{Prefix: b.q.Config().Prefix, ResultRetention: 50 * time.Millisecond})
		long = newQueue(t, b.rdb, name, queue.Config{Prefix: b.q.Config().Prefix, ResultRetention: time.Hour})
		return short, long, tagOf(short)
	}
	ack := func(q *queue.Queue, payload string) string {
		t.Helper()
		id := mustEnqueue(t, q, payload)[0]
		if err := q.Ack(ctx, mustClaim(t, q, 1, 1)[0], []byte(payload)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	stored := func(tag string, ids ...string) []bool {
		t.Helper()
		var got []bool
		for _, id := range ids {
			ok, err := b.rdb.HExists(ctx, tag+":results", id).Result()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ok)
		}
		return got
	}
	pastRetention := func() { untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(51*time.Millisecond)) }

	short, long, tag := handles("by-settle")
	first := ack(short, "first")
	keeper := ack(long, "keeper")
	pastRetention()
	if got := stored(tag, first, keeper); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("stored %v before any Settle, want both", got)
	}
	second := ack(short, "second")
	if got := stored(tag, first, keeper, second); !slices.Equal(got, []bool{false, true, true}) {
		t.Fatalf("stored %v after the next Ack, want all but the expired one", got)
	}

	short, long, tag = handles("by-tidy")
	first = ack(short, "first")
	keeper = ack(long, "keeper")
	pastRetention()
	if n, err := qstore.Of(short).Tidy(ctx, 10); n != 0 || err != nil {
		t.Fatalf("Tidy = %d, %v", n, err)
	}
	if got := stored(tag, first, keeper); !slices.Equal(got, []bool{false, true}) {
		t.Fatalf("stored %v after Tidy, want all but the expired one", got)
	}
	if n, err := b.rdb.LLen(ctx, tag+":expiring").Result(); n != 1 || err != nil {
		t.Fatalf("expiring has %d entries (%v), want the keeper's", n, err)
	}

	// Idle: no Settle or Tidy runs, and Redis expires both keys.
	short, _, tag = handles("idle")
	ack(short, "first")
	testrig.Eventually(t, 10*time.Second, "results and expiring gone", func() bool {
		n, err := b.rdb.Exists(ctx, tag+":results", tag+":expiring").Result()
		return n == 0 && err == nil
	})
}

// Processes may disagree on ResultRetention: the one with the shortest
// cuts no other's result short.
func TestShorterRetentionKeepsLongerResults(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{ResultRetention: time.Hour})
	ctx := testContext(t)
	short := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, ResultRetention: 50 * time.Millisecond})
	ids := mustEnqueue(t, b.q, "long", "short")
	items := mustClaim(t, b.q, 2, 2)
	if err := b.q.Ack(ctx, items[0], []byte("long")); err != nil {
		t.Fatal(err)
	}
	if err := short.Ack(ctx, items[1], []byte("short")); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(51*time.Millisecond))
	if _, err := short.Result(ctx, ids[1]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("short Result = %v, want ErrNotFound", err)
	}
	if r, err := short.Result(ctx, ids[0]); string(r) != "long" || err != nil {
		t.Fatalf("long Result = %q, %v; want long", r, err)
	}
	for _, k := range []string{":results", ":expiring"} {
		if ttl, err := b.rdb.PTTL(ctx, tagOf(b.q)+k).Result(); ttl < 59*time.Minute || err != nil {
			t.Fatalf("%s TTL %v (%v), want about an hour", k, ttl, err)
		}
	}
}
