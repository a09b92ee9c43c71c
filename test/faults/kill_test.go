package faults_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// TestWorkersKilledMidDrain runs worker processes as a deployment would:
// each enlists a recruiter holding jobs.Drain, jobs.TidyStale and
// jobs.PromoteDue for one queue, under the recruiter's locks. A worker in
// the middle of a drain slice is SIGKILLed, at a random point, again and
// again, and replaced. At the end every good item has exactly one result,
// the one of its last claim; only the poison items (whose handler always
// fails) are dead; the killed workers' leases were tidied back.
func TestWorkersKilledMidDrain(t *testing.T) {
	t.Parallel()
	const (
		items       = 3000
		poisonEvery = 300 // 10 poison items
		workers     = 3
		kills       = 22
		poison      = "poison-"
	)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := testrig.Context(t, time.Minute)
	spec := workerSpec{Addr: srv.Addr(), Prefix: redistest.Prefix(t), Queue: "killed",
		Lease: time.Second, Budget: 100 * time.Millisecond, Work: 200 * time.Microsecond, Batch: 25,
		// Above the attempts the kills can cost a good item (one per kill),
		// so that only a failing handler kills an item.
		MaxAttempts: kills + 3, Poison: poison}
	q, err := queue.New(rdb, spec.Queue, spec.queueConfig())
	if err != nil {
		t.Fatal(err)
	}
	ids, payloads := enqueueNumbered(t, q, items, poison, poisonEvery)
	remaining := func() int64 {
		s, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.Pending + s.Leased + s.Delayed
	}

	dir := t.TempDir()
	var procs []*workerProc
	for i := range workers {
		procs = append(procs, startWorker(t, spec, dir, i))
	}
	began := time.Now()
	var killedMidItem int
	for k := range kills {
		// Spread the kills over the run: wait for the next share of progress.
		threshold := int64(items - (k+1)*items/(kills+2))
		testrig.Eventually(t, time.Minute, fmt.Sprintf("kill %d: %d items left", k+1, threshold), func() bool { return remaining() <= threshold })
		var victim *workerProc
		testrig.Eventually(t, 20*time.Second, fmt.Sprintf("kill %d: a live worker mid-slice", k+1), func() bool {
			for _, i := range rand.Perm(len(procs)) {
				if w := procs[i]; !w.killed && !w.exited() && w.midSlice() {
					victim = w
					return true
				}
			}
			return false
		})
		time.Sleep(rand.N(10 * time.Millisecond)) // a random point of the slice, not its start
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL worker %d: %v", victim.n, err)
		}
		victim.killed = true
		<-victim.done
		if strings.HasPrefix(victim.lastLine(), "H ") {
			killedMidItem++
		}
		procs = append(procs, startWorker(t, spec, dir, len(procs)))
	}
	for _, w := range procs {
		if !w.killed {
			w.waitClean(t, 90*time.Second)
		}
	}
	took := time.Since(began)

	wl := readWorkerLogs(t, procs)
	redelivered := checkResults(t, q, ids, payloads, wl, poison)
	deadItems, err := testrig.DeadLetters(ctx, q, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deadItems {
		if !strings.Contains(d.Cause, errPoison.Error()) {
			t.Errorf("item %s died of %q, not of its handler's failure", d.ID, d.Cause)
		}
	}
	maxAttempt := 0 // of a good item: what the kills cost it
	for i, id := range ids {
		for _, h := range wl.handled[id] {
			if !strings.HasPrefix(payloads[i], poison) {
				maxAttempt = max(maxAttempt, h.attempt)
			}
		}
	}
	t.Logf("%d items (%d poison) drained by %d worker processes in %v: %d SIGKILLs mid-slice (%d mid-item), %d slices, %d items handled, %d good items redelivered, highest attempt of a good item %d; %d dead, all poison; %d leases tidied by the workers that exited cleanly; %d of %d good items with exactly one result, 0 lost",
		items, items/poisonEvery, len(procs), took.Round(time.Millisecond), kills, killedMidItem, wl.slices, wl.handledCount(),
		redelivered, maxAttempt, len(deadItems), wl.tidied, items-items/poisonEvery, items-items/poisonEvery)
	if len(deadItems) != items/poisonEvery {
		t.Errorf("%d dead items, want the %d poison ones", len(deadItems), items/poisonEvery)
	}
	// Only an expired lease handed back by TidyStale gives a good item a
	// second claim (Release does not count one, and the handler never fails
	// it), so redelivered items prove that tidying recovered the leases.
	if redelivered == 0 {
		t.Errorf("no good item was handled twice: the kills hit no batch, or the leases were never tidied")
	}
}
