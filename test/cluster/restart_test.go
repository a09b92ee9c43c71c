package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
)

// A queue of 3,000 items drains on a 3-master cluster while the master
// that owns its slot is SIGKILLed and restarted. The cluster has no
// replicas, so the slot is unavailable while the node is down; the nodes
// run with an fsync-always AOF, so the restarted master has every write it
// acknowledged. The drain reports errors while the node is down, recovers
// after the restart, and in the end every id has its one result.
func TestMasterRestartedDuringDrain(t *testing.T) {
	t.Parallel()
	const items = 3000
	cl := redistest.StartClusterWithArgs(t, "--appendonly", "yes", "--appendfsync", "always")
	cc := cl.Client(t)
	prefix := redistest.Prefix(t)
	const name = "restart"
	ctx := testrig.Context(t, 90*time.Second)

	slot, err := cl.SlotOf(ctx, "{"+prefix+":q:"+name+"}")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	dr := startDrain(t, cc, prefix, name, items, 50)

	dr.waitHandled(t, 30*time.Second, items/5)
	before := dr.job(t, drainJob)
	killedAt := time.Now()
	owner.Kill()
	doneAtKill, _ := dr.handled()

	// The slot is really gone: a queue call fails.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = dr.q.Depth(sctx)
	cancel()
	if err == nil {
		t.Fatal("queue stats succeeded with its master killed")
	}
	// The drain meets the outage: its slices fail (the recruiter logs and
	// counts them), or its lock cannot be taken if the lock's slot died too.
	testrig.Eventually(t, 30*time.Second, "the drain to see the outage", func() bool {
		js := dr.job(t, drainJob)
		return js.Failed() > before.Failed() || dr.rec.Stats().BreakerOpen
	})
	during := dr.job(t, drainJob)

	owner.Restart()
	cl.WaitReady(t)
	downFor := time.Since(killedAt)

	// Nothing acknowledged before the kill is gone from the restarted
	// master, and nothing is lost: the items still queued are those not
	// handled yet, give or take the batches in flight. Up to three batches
	// are handled but not settled at once: the one being handled, the one
	// before it being settled, and the one before that whose settle may
	// still be under way (jobs.Drain overlaps them). The drain resumes
	// as soon as the master is back, so the count is read with the queue.
	const inFlight = 3 * 50
	s, err := dr.q.Depth(ctx)
	if err != nil {
		t.Fatalf("queue stats after the restart: %v", err)
	}
	doneNow, _ := dr.handled()
	if left := s.Pending + s.Leased + s.Delayed; left < int64(items-doneNow-inFlight) || left > int64(items-doneAtKill+inFlight) {
		t.Errorf("after the restart %d items are still queued (%+v), want %d to %d, give or take %d in flight (%d of %d handled before the kill, %d now)",
			left, s, items-doneNow, items-doneAtKill, inFlight, doneAtKill, items, doneNow)
	}

	recovering := time.Now()
	dr.waitDrained(t, 60*time.Second)
	dr.shutdown(t)
	dr.checkResults(t)

	distinct, again := dr.handled()
	after := dr.job(t, drainJob)
	t.Logf("slot %d on %s killed after %d of %d items; down %v; drain failures %d before, %d by the restart, %d in all (%d slices); "+
		"drained %v after the restart; %d items, %d redelivered",
		slot, owner.Addr(), doneAtKill, items, downFor.Round(time.Millisecond),
		before.Failed(), during.Failed(), after.Failed(), after.Slices,
		time.Since(recovering).Round(time.Millisecond), distinct, again)
	if after.Failed() == before.Failed() && !dr.rec.Stats().BreakerOpen && during.Failed() == before.Failed() {
		t.Error("the drain never saw the outage: the test proved nothing")
	}
}
