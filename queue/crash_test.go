package queue_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// workerProc is one worker process of the crash test.
type workerProc struct {
	cmd    *exec.Cmd
	log    string
	done   chan struct{} // closed when cmd.Wait returns
	killed bool
}

func startWorker(t *testing.T, spec workerSpec, dir string, n int) *workerProc {
	t.Helper()
	spec.Log = filepath.Join(dir, fmt.Sprintf("worker-%d.log", n))
	spec.Settle = n%2 == 0
	env, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.out", n)))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	w := &workerProc{cmd: cmd, log: spec.Log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() { // never leave a process behind, even on t.Fatal
		_ = cmd.Process.Kill()
		<-w.done
	})
	return w
}

func (w *workerProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// midBatch reports whether the worker's log ends inside a batch: claims
// logged, the batch's end ("E\n") not yet.
func (w *workerProc) midBatch() bool {
	f, err := os.Open(w.log)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < 2 {
		return false
	}
	tail := make([]byte, 2)
	if _, err := f.ReadAt(tail, fi.Size()-2); err != nil {
		return false
	}
	return string(tail) != "E\n"
}

// At least once under crashes: worker processes drain a queue while some
// are SIGKILLed mid-batch. Tidying recovers their leases; at the end every
// item has exactly its result, none was lost, and no item was ever in two
// live leases at once.
func TestCrashedWorkersLoseNothing(t *testing.T) {
	t.Parallel()
	const (
		items   = 3000
		workers = 4
		kills   = 4
		lease   = 300 * time.Millisecond
	)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	q := newQueue(t, rdb, "crash", queue.Config{Lease: lease, MaxAttempts: 100})
	payloads := make([]string, items)
	for i := range payloads {
		payloads[i] = "p-" + strconv.Itoa(i)
	}
	ids := mustEnqueue(t, q, payloads...)

	dir := t.TempDir()
	spec := workerSpec{Addr: srv.Addr(), Prefix: q.Config().Prefix, Name: q.Name(), Lease: lease, Batch: 20, Work: 300 * time.Microsecond}
	var procs []*workerProc
	for i := range workers {
		procs = append(procs, startWorker(t, spec, dir, i))
	}
	remaining := func() int64 {
		s := mustDepth(t, q)
		return s.Pending + s.Leased + s.Delayed
	}
	for k := range kills {
		// Spread the kills over the run: wait for the next share of progress.
		threshold := int64(items - (k+1)*items/(kills+2))
		testrig.Eventually(t, 30*time.Second, fmt.Sprintf("%d items left", threshold), func() bool { return remaining() <= threshold })
		var victim *workerProc
		testrig.Eventually(t, 10*time.Second, "a live worker mid-batch", func() bool {
			for _, i := range rand.Perm(len(procs)) {
				if w := procs[i]; !w.killed && !w.exited() && w.midBatch() {
					victim = w
					return true
				}
			}
			return false
		})
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		victim.killed = true
		<-victim.done
		procs = append(procs, startWorker(t, spec, dir, len(procs)))
	}
	for i, w := range procs {
		select {
		case <-w.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("worker %d still running; stats %+v", i, mustDepth(t, q))
		}
		if !w.killed && w.cmd.ProcessState.ExitCode() != 0 {
			out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker-%d.out", i)))
			t.Fatalf("worker %d: %v\n%s", i, w.cmd.ProcessState, out)
		}
	}

	wantCounts(t, q, queue.Depth{})
	claims, acks := readWorkerLogs(t, procs)
	checkResults(t, q, rdb, ids, payloads, claims)
	checkNoOverlappingLeases(t, claims, lease)
	redelivered := 0
	for id, cs := range claims {
		if len(cs) > 1 {
			redelivered++
		}
		if acks[id] > 1 {
			t.Errorf("item %s acked %d times", id, acks[id])
		}
	}
	if redelivered == 0 {
		t.Fatalf("no item was claimed twice: the kills did not hit a batch")
	}
	t.Logf("%d items, %d workers killed mid-batch, %d items redelivered", items, kills, redelivered)
}

// claimRecord is one logged claim.
type claimRecord struct {
	token    string
	claim    int64 // the claim's number, from the token "attempt-number"
	deadline int64 // ms, Redis clock
}

// readWorkerLogs parses every worker's log: the claims of each id, and how
// many acks each id got.
func readWorkerLogs(t *testing.T, procs []*workerProc) (map[string][]claimRecord, map[string]int) {
	t.Helper()
	claims, acks := map[string][]claimRecord{}, map[string]int{}
	for _, w := range procs {
		f, err := os.Open(w.log)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 4 && f[0] == "C":
				_, number, _ := strings.Cut(f[2], "-")
				claim, err1 := strconv.ParseInt(number, 10, 64)
				deadline, err2 := strconv.ParseInt(f[3], 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: bad line %q", w.log, sc.Text())
				}
				claims[f[1]] = append(claims[f[1]], claimRecord{f[2], claim, deadline})
			case len(f) == 3 && f[0] == "A":
				acks[f[1]]++
			}
		}
		_ = f.Close()
	}
	for _, cs := range claims {
		slices.SortFunc(cs, func(a, b claimRecord) int { return cmp.Compare(a.claim, b.claim) })
	}
	return claims, acks
}

// checkResults: every id has its own payload's result, written by its last
// claim, and nothing else is left in Redis for it.
func checkResults(t *testing.T, q *queue.Queue, rdb *redis.Client, ids, payloads []string, claims map[string][]claimRecord) {
	t.Helper()
	ctx := testContext(t)
	tag := tagOf(q)
	stored, err := rdb.HMGet(ctx, tag+":results", ids...).Result()
	if err != nil {
		t.Fatalf("read results: %v", err)
	}
	for i, id := range ids {
		cs := claims[id]
		if len(cs) == 0 {
			t.Fatalf("item %s was never claimed (logged)", id)
		}
		// Stored as "expiry:token:result": the token is the last claim's.
		s, _ := stored[i].(string)
		_, got, _ := strings.Cut(s, ":")
		if want := cs[len(cs)-1].token + ":r:" + payloads[i]; got != want {
			t.Fatalf("item %s: stored result %q, want %q", id, s, want)
		}
	}
	if r, err := q.Result(ctx, ids[0]); string(r) != "r:"+payloads[0] || err != nil {
		t.Fatalf("Result = %q, %v", r, err)
	}
	if n := itemFields(t, rdb, tag+":results"); n != len(ids) {
		t.Fatalf("%d results, want %d", n, len(ids))
	}
	for _, h := range []string{"values", "attempts", "ready", "causes", "waiting"} {
		if n := itemFields(t, rdb, tag+":"+h); n != 0 {
			t.Errorf("%s has %d fields, want none", h, n)
		}
	}
}

// checkNoOverlappingLeases: claims of one id, in token (so claim) order,
// each begin no earlier than the lease before it ended. The workers never
// extend, so a claim began at its deadline minus the lease.
func checkNoOverlappingLeases(t *testing.T, claims map[string][]claimRecord, lease time.Duration) {
	t.Helper()
	for id, cs := range claims {
		for k := 1; k < len(cs); k++ {
			if began := cs[k].deadline - lease.Milliseconds(); began < cs[k-1].deadline {
				t.Fatalf("item %s: claim %s began at %d, before claim %s's lease ended at %d",
					id, cs[k].token, began, cs[k-1].token, cs[k-1].deadline)
			}
		}
	}
}
