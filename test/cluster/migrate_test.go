package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
)

// A queue of 2,000 items drains on a 3-master cluster while its hash-tag
// slot is resharded to another master, as redis-cli does it: SETSLOT
// IMPORTING and MIGRATING, MIGRATE of its keys one at a time (a drain
// slice runs between every two steps), SETSLOT NODE. Mid-migration the
// queue's keys are split over two nodes, so its scripts get ASK or
// TRYAGAIN; afterwards the client's slot map is stale and gets MOVED. The
// jobs may report errors meanwhile, nothing more: the drain completes
// once the slot has moved, and every id has its one result.
func TestSlotMigrationDuringDrain(t *testing.T) {
	t.Parallel()
	migrateDuringDrain(t, nil)
}

// The same with priorities and a type limit on the queue: its claims take
// the path that reads the keys the scripts name themselves (weights,
// round robin, type limits), which migrate one at a time too.
func TestSlotMigrationDuringDrainWithPriorities(t *testing.T) {
	t.Parallel()
	migrateDuringDrain(t, func(ctx context.Context, q *queue.Queue) error {
		if err := q.SetPriorities(ctx, map[string]int{"high": 3, "default": 1}); err != nil {
			return err
		}
		return qstore.Of(q).SetTypeLimit(ctx, "other", qstore.TypeLimit{Running: 1})
	})
}

func migrateDuringDrain(t *testing.T, prepare func(context.Context, *queue.Queue) error) {
	const items = 2000
	cl := redistest.StartCluster(t)
	cc := cl.Client(t)
	seen := &redirects{}
	cc.OnNewNode(seen.attach) // before the first command: every node client counts
	prefix := redistest.Prefix(t)
	const name = "migrate"
	ctx := testrig.Context(t, 90*time.Second)

	slot, err := cl.SlotOf(ctx, "{"+prefix+":q:"+name+"}")
	if err != nil {
		t.Fatal(err)
	}
	from, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := cl.Nodes()[0]
	if to == from {
		to = cl.Nodes()[1]
	}
	dr := startDrain(t, cc, prefix, name, items, 20)
	if prepare != nil {
		if err := prepare(ctx, dr.q); err != nil {
			t.Fatal(err)
		}
	}
	dr.waitHandled(t, 30*time.Second, items/10)

	m, err := cl.BeginSlotMigration(t, ctx, slot, from, to)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	doneAtBegin, _ := dr.handled()
	beforeFailed := dr.job(t, drainJob).Failed()
	steps, moved := 0, 0
	for {
		// Let a drain slice meet this state of the migration first.
		attempts := dr.attempts(t)
		testrig.Eventually(t, 30*time.Second, "a drain slice mid-migration", func() bool {
			return dr.attempts(t) > attempts
		}, dr.describe)
		n, err := m.MoveKeys(ctx, 1) // one key a step: every split of the queue's keys is met
		if err != nil {
			t.Fatalf("%v: step %d: %v", m, steps, err)
		}
		if n == 0 {
			break
		}
		steps++
		moved += n
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatalf("%v: %v", m, err)
	}
	doneAtFinish, _ := dr.handled()
	migrating := time.Since(began)

	dr.waitDrained(t, 60*time.Second)
	dr.shutdown(t)
	dr.checkResults(t)

	if owner, err := cl.Owner(ctx, slot); err != nil || owner != to {
		t.Fatalf("slot %d owner after the migration = %v, %v; want %s", slot, owner, err, to.Addr())
	}
	if left, err := m.KeysLeft(ctx); err != nil || left != 0 {
		t.Fatalf("keys of slot %d left on the source = %d, %v; want 0", slot, left, err)
	}
	if n, err := to.Client(t).ClusterCountKeysInSlot(ctx, slot).Result(); err != nil || n == 0 {
		t.Fatalf("keys of slot %d on the target = %d, %v; want the queue's results", slot, n, err)
	}
	distinct, again := dr.handled()
	js := dr.job(t, drainJob)
	t.Logf("%v: %d keys in %d MIGRATE steps over %v; items handled %d at the start, %d at SETSLOT NODE, %d in all (%d redelivered); "+
		"drain failures %d before, %d in all (%d slices); redirects seen by node clients: %v",
		m, moved, steps, migrating.Round(time.Millisecond), doneAtBegin, doneAtFinish, distinct, again,
		beforeFailed, js.Failed(), js.Slices, seen)
	if seen.moved.Load()+seen.ask.Load()+seen.tryAgain.Load() == 0 {
		t.Fatal("no MOVED, ASK or TRYAGAIN reached a client: the migration was not exercised")
	}
}
