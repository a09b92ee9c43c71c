package faults_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// TestPausedLockHolder freezes (SIGSTOP) a worker process in the middle of
// a drain slice, holding the job's lock and a batch of leases, for longer
// than both live. A second worker takes the job over, tidies the frozen
// batch back and handles it. Then the first wakes (SIGCONT) and finishes
// its slice: two slices of the job overlapped, which a lock with a TTL
// cannot prevent, and the claim tokens make it harmless: the stale acks
// are refused, and every item ends with exactly one result, the one of its
// last claim.
func TestPausedLockHolder(t *testing.T) {
	t.Parallel()
	const items = 200
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := testrig.Context(t, time.Minute)
	spec := workerSpec{Addr: srv.Addr(), Prefix: redistest.Prefix(t), Queue: "paused",
		Lease: time.Second, Budget: 200 * time.Millisecond, Work: 5 * time.Millisecond, Batch: 10, MaxAttempts: 10}
	q, err := queue.New(rdb, spec.Queue, spec.queueConfig())
	if err != nil {
		t.Fatal(err)
	}
	ids, payloads := enqueueNumbered(t, q, items, "", 0)
	lockKey := spec.Prefix + ":lock:drain." + spec.Queue
	dir := t.TempDir()

	first := startWorker(t, spec, dir, 0)
	var frozenID, frozenToken string
	testrig.Eventually(t, 30*time.Second, "the first worker frozen mid-item, holding the drain lock", func() bool {
		if first.exited() {
			t.Fatalf("the first worker exited before it could be frozen")
		}
		if countLines(first.log, "H ") < 20 || !strings.HasPrefix(first.lastLine(), "H ") {
			return false
		}
		signal(t, first, syscall.SIGSTOP)
		last := first.lastLine() // final while it is stopped
		// A slice holds the lock: the hash has a token.
		held, err := rdb.HGet(ctx, lockKey, "token").Result()
		// Stopped in its handler, not in the settle after the batch's last
		// item: the item is leased, not yet settled.
		if f := strings.Fields(last); len(f) == 4 && f[0] == "H" && err == nil && held != "" && settledUnder(ctx, q, f[1]) == "" {
			frozenID, frozenToken = f[1], f[2]
			return true
		}
		signal(t, first, syscall.SIGCONT) // between items or slices: try again
		return false
	})
	frozenAt := time.Now()
	lockTTL := spec.Budget + max(spec.Budget/2, 250*time.Millisecond) // the lock's TTL: budget + max(budget/2, 250ms)

	second := startWorker(t, spec, dir, 1)
	var takenBy string // the claim under which the frozen item was settled
	testrig.Eventually(t, 30*time.Second, "the frozen item settled by the second worker", func() bool {
		takenBy = settledUnder(ctx, q, frozenID)
		return takenBy != ""
	})
	frozenFor := time.Since(frozenAt)
	signal(t, first, syscall.SIGCONT)
	first.waitClean(t, time.Minute)
	second.waitClean(t, time.Minute)

	wl := readWorkerLogs(t, []*workerProc{first, second})
	redelivered := checkResults(t, q, ids, payloads, wl, "")
	after := settledUnder(ctx, q, frozenID)
	out, err := os.ReadFile(first.out)
	if err != nil {
		t.Fatal(err)
	}
	// The woken slice's settle is refused (lease lost); on a loaded machine
	// it may instead outlast its timeout, just woken: either way its slice
	// ends in error, and what counts is that the result did not change.
	refused := strings.Count(string(out), queue.ErrLeaseLost.Error())
	settleFailed := strings.Count(string(out), "settle: ")
	t.Logf("frozen %v (lock TTL %v, lease %v) on item %s under claim %s; the second worker settled it under claim %s; %d slices, %d items handled in all, %d redelivered; the woken worker's settles refused %d times, failed %d times; %d of %d items with exactly one result, 0 lost",
		frozenFor.Round(time.Millisecond), lockTTL, spec.Lease, frozenID, frozenToken, takenBy, wl.slices, wl.handledCount(), redelivered, refused, settleFailed, items, items)
	switch {
	case frozenFor < max(lockTTL, spec.Lease):
		t.Errorf("the first worker was frozen for %v only, less than its lock's TTL %v or its lease %v", frozenFor, lockTTL, spec.Lease)
	case takenBy == frozenToken:
		t.Errorf("item %s was settled under the frozen claim %s", frozenID, frozenToken)
	case after != takenBy:
		t.Errorf("item %s's result changed after the frozen worker woke: now under claim %s, was %s", frozenID, after, takenBy)
	case refused+settleFailed == 0:
		t.Errorf("the woken worker's stale settle was reported neither as a lost lease nor as failed; its log:\n%s", tail(out, 4096))
	}
	if !workerHandled(wl, frozenID, second.n) {
		t.Errorf("the second worker never handled the frozen item %s: no takeover", frozenID)
	}
}

// enqueueNumbered enqueues n items "item-i" (and, every poisonEvery-th,
// poison+"i") and returns their ids and payloads.
func enqueueNumbered(t *testing.T, q *queue.Queue, n int, poison string, poisonEvery int) ([]string, []string) {
	t.Helper()
	payloads := make([]string, n)
	raw := make([][]byte, n)
	for i := range payloads {
		payloads[i] = "item-" + strconv.Itoa(i)
		if poisonEvery > 0 && i%poisonEvery == poisonEvery-1 {
			payloads[i] = poison + strconv.Itoa(i)
		}
		raw[i] = []byte(payloads[i])
	}
	ids, err := q.EnqueueBatch(testrig.Context(t, time.Minute), raw)
	if err != nil {
		t.Fatal(err)
	}
	return ids, payloads
}

// settledUnder is the claim under which id's result was stored, "" if it
// has none yet.
func settledUnder(ctx context.Context, q *queue.Queue, id string) string {
	r, err := q.Result(ctx, id)
	if err != nil {
		return ""
	}
	_, token, _ := strings.Cut(string(r), "@")
	return token
}

func signal(t *testing.T, w *workerProc, sig syscall.Signal) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("worker %d: %v: %v", w.n, sig, err)
	}
}

// countLines counts the lines of a file that start with prefix.
func countLines(path, prefix string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count("\n"+string(data), "\n"+prefix)
}

func workerHandled(wl workerLogs, id string, worker int) bool {
	for _, h := range wl.handled[id] {
		if h.worker == worker {
			return true
		}
	}
	return false
}

func (wl workerLogs) handledCount() int {
	n := 0
	for _, hs := range wl.handled {
		n += len(hs)
	}
	return n
}

// checkResults: every item ends settled exactly once, as the queue's
// public API shows it: a good item's result is that of its own payload
// under its last claim (every earlier claim's settle, had it come later,
// would have been refused), and its value is gone; a poison item is dead,
// with no result. It returns how many good items were handled more than
// once.
func checkResults(t *testing.T, q *queue.Queue, ids, payloads []string, wl workerLogs, poison string) (redelivered int) {
	t.Helper()
	ctx := testrig.Context(t, time.Minute)
	dead := 0
	for i, id := range ids {
		got, err := q.Result(ctx, id)
		if poison != "" && strings.HasPrefix(payloads[i], poison) {
			dead++
			if !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("poison item %s has a result %q (%v)", id, got, err)
			}
			continue
		}
		last, ok := wl.lastClaim(id)
		if !ok {
			t.Fatalf("item %s was never handled", id)
		}
		if want := resultOf(payloads[i], last.token); string(got) != want || err != nil {
			t.Fatalf("item %s: result %q (%v), want %q: the result of its last claim", id, got, err, want)
		}
		if v, err := q.Value(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("acked item %s still has a value %q (%v)", id, v, err)
		}
		if len(wl.handled[id]) > 1 {
			redelivered++
		}
	}
	st, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Leased != 0 || st.Delayed != 0 || st.Dead != int64(dead) {
		t.Fatalf("queue at the end: %+v, want nothing but %d dead", st, dead)
	}
	return redelivered
}
