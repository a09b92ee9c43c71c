package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// EnqueueMany writes 2,500 tasks in three script calls (1,000 each at
// most), returns their ids in the order of their arguments, and each
// task runs with its own arguments. No arguments: no call.
func TestEnqueueMany(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	b := setup(t, rdb, queue.Config{})
	ctx := testrig.Context(t, 60*time.Second)
	if err := addTask.Handle(b.mux, add); err != nil {
		t.Fatal(err)
	}
	if _, err := addTask.EnqueueMany(ctx, b.client, []addArgs{{}}); err != nil { // dial, load the script
		t.Fatal(err)
	}
	args := make([]addArgs, 2500)
	for i := range args {
		args[i] = addArgs{A: i, B: 1, Label: fmt.Sprint("n", i)}
	}
	before := rt.Load()
	ids, err := addTask.EnqueueMany(ctx, b.client, args)
	if err != nil || len(ids) != len(args) {
		t.Fatalf("EnqueueMany = %d ids, %v; want %d", len(ids), err, len(args))
	}
	if n := rt.Load() - before; n != 3 {
		t.Errorf("2,500 tasks took %d round trips, want 3", n)
	}
	before = rt.Load()
	if none, err := enqueueMany(ctx, b.client, "add", []addArgs{}); none != nil || err != nil || rt.Load() != before {
		t.Errorf("EnqueueMany of nothing = %v, %v, %d round trips; want nothing, none", none, err, rt.Load()-before)
	}

	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s twice", id)
		}
		seen[id] = true
	}
	// The first id is the first arguments' task.
	payload, err := b.q.Value(ctx, ids[0])
	if typ, _, a, err2 := tasks.DecodeEnvelope(payload); err != nil || err2 != nil || typ != "add" || string(a) != `{"A":0,"B":1,"Label":"n0"}` {
		t.Fatalf("first task = %q %s, %v %v", typ, a, err, err2)
	}
	b.drive(t, "every task done", func() bool { d, err := b.q.Depth(ctx); return err == nil && d == queue.Depth{} })
	for i, id := range ids {
		want := fmt.Sprintf(`{"Sum":%d,"Label":"n%d"}`, i+1, i)
		if res, err := b.q.Result(ctx, id); err != nil || string(res) != want {
			t.Fatalf("Result of task %d (%s) = %s, %v; want %s", i, id, res, err, want)
		}
	}
}

// Delay and Attempts apply to every task of an EnqueueMany; Unique does
// not apply and is refused, adding nothing.
func TestEnqueueManyOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries) // three attempts
	ctx := testrig.Context(t, 30*time.Second)
	failing := tasks.Define[int, int]("fail")
	if err := failing.Handle(b.mux, func(_ context.Context, n int) (int, error) { return 0, fmt.Errorf("no %d", n) }); err != nil {
		t.Fatal(err)
	}

	if ids, err := failing.EnqueueMany(ctx, b.client, []int{1, 2}, tasks.Unique("k", time.Hour)); ids != nil || !errors.Is(err, tasks.ErrInvalidArgument) || !strings.Contains(err.Error(), "Unique") {
		t.Fatalf("EnqueueMany with Unique = %v, %v; want ErrInvalidArgument naming Unique", ids, err)
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want nothing added", d, err)
	}

	delayed, err := failing.EnqueueMany(ctx, b.client, []int{1, 2, 3}, tasks.Delay(time.Hour))
	if err != nil || len(delayed) != 3 {
		t.Fatalf("EnqueueMany with Delay = %v, %v", delayed, err)
	}
	once, err := failing.EnqueueMany(ctx, b.client, []int{4, 5}, tasks.Attempts(1))
	if err != nil || len(once) != 2 {
		t.Fatalf("EnqueueMany with Attempts = %v, %v", once, err)
	}
	b.drive(t, "the tasks of one attempt dead", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && d.Dead == 2 && d.Pending+d.Leased == 0
	})
	for _, id := range once {
		wantDead(t, b.q, id, "no ")
	}
	if st := statsOf(b.mux, "fail"); st.Done+st.Retried+st.Dead != 2 || st.Dead != 2 {
		t.Errorf("stats of fail = %+v; want 2 attempts, both dead at the first", st)
	}
	if d, err := b.q.Depth(ctx); err != nil || d.Delayed != 3 || d.Due != 0 {
		t.Fatalf("Depth = %+v, %v; want the 3 delayed tasks waiting for their hour", d, err)
	}
}

func statsOf(m *tasks.Mux, typ string) tasks.TypeStats {
	for _, s := range m.Stats() {
		if s.Type == typ {
			return s
		}
	}
	return tasks.TypeStats{}
}
