package inspect_test

import (
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// A chain's and a fan-out's progress read from the queue: the chain at
// its first step, then failed when that step dies; the fan-out with one
// child done and one dead.
func TestChainAndFanOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "flows", queue.Config{MaxAttempts: 1})
	client, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{renderTask.Step(mailArgs{To: "bob"}), sendTask.Step(mailArgs{To: "bob"})})
	if err != nil {
		t.Fatal(err)
	}
	it, err := b.in.Item(ctx, "flows", chain)
	if err != nil || it.Task == nil || it.Task.Chain != chain {
		t.Fatalf("Item(chain's first step) = %+v, %v; want its Chain %s", it.Task, err, chain)
	}
	c, err := b.in.Chain(ctx, "flows", chain)
	if err != nil || c.State != inspect.FlowRunning || c.Step != 1 || c.Steps != 2 || c.Current != chain {
		t.Fatalf("Chain = %+v, %v; want running at step 1 of 2", c, err)
	}
	items, err := q.Claim(ctx, 1)
	if err != nil || len(items) != 1 {
		t.Fatalf("Claim = %v, %v", items, err)
	}
	if err := q.Nack(ctx, items[0], errors.New("template missing")); err != nil {
		t.Fatal(err)
	}
	if c, err = b.in.Chain(ctx, "flows", chain); err != nil || c.State != inspect.FlowFailed || c.Cause != "template missing" {
		t.Fatalf("Chain after its step died = %+v, %v; want failed, template missing", c, err)
	}

	fan, err := tasks.EnqueueFanOut(ctx, client, []tasks.Step{partTask.Step(mailArgs{To: "a"}), partTask.Step(mailArgs{To: "b"})},
		joinTask.Step(mailArgs{}))
	if err != nil {
		t.Fatal(err)
	}
	if items, err = q.Claim(ctx, 2); err != nil || len(items) != 2 {
		t.Fatalf("Claim = %v, %v", items, err)
	}
	if err := q.Ack(ctx, items[0], []byte(`"ok"`)); err != nil {
		t.Fatal(err)
	}
	if err := q.Nack(ctx, items[1], errors.New("part b failed")); err != nil {
		t.Fatal(err)
	}
	f, err := b.in.FanOut(ctx, "flows", fan)
	if err != nil || f.State != inspect.FlowFailed || f.Children != 2 || f.Done != 1 || f.Dead != 1 || f.DeadChild != items[1].ID {
		t.Fatalf("FanOut = %+v, %v; want failed, 1 of 2 done, %s dead", f, err, items[1].ID)
	}
	if _, err := b.in.FanOut(ctx, "flows", "nope"); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("FanOut(nope): %v; want ErrNotFound", err)
	}
	if _, err := b.in.Chain(ctx, "flows", "nope"); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("Chain(nope): %v; want ErrNotFound", err)
	}
}

// A chain of 3 and a fan-out of 3 canceled with tasks.Cancel read
// canceled, as tasks.ChainStatus and tasks.FanOutStatus read them: one
// mapping of the storage's states serves both packages.
func TestCanceledFlows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "flows", queue.Config{})
	client, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{
		renderTask.Step(mailArgs{To: "a"}), sendTask.Step(mailArgs{To: "a"}), logTask.Step(mailArgs{To: "a"})})
	if err != nil {
		t.Fatal(err)
	}
	fan, err := tasks.EnqueueFanOut(ctx, client, []tasks.Step{
		partTask.Step(mailArgs{To: "a"}), partTask.Step(mailArgs{To: "b"}), partTask.Step(mailArgs{To: "c"})},
		joinTask.Step(mailArgs{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{chain, fan} {
		if err := tasks.Cancel(ctx, client, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
	if p, err := tasks.ChainStatus(ctx, client, chain); err != nil || p.State != tasks.StateCanceled {
		t.Fatalf("ChainStatus = %+v, %v; want canceled", p, err)
	}
	c, err := b.in.Chain(ctx, "flows", chain)
	if err != nil || c.State.String() != "canceled" || c.Step != 1 || c.Steps != 3 || c.Current != chain {
		t.Errorf("Chain = %+v (%v), %v; want canceled at step 1 of 3", c, c.State, err)
	}
	if p, err := tasks.FanOutStatus(ctx, client, fan); err != nil || p.State != tasks.StateCanceled {
		t.Fatalf("FanOutStatus = %+v, %v; want canceled", p, err)
	}
	f, err := b.in.FanOut(ctx, "flows", fan)
	if err != nil || f.State.String() != "canceled" || f.Children != 3 || f.Done != 0 {
		t.Errorf("FanOut = %+v (%v), %v; want canceled, 0 of 3 done", f, f.State, err)
	}
}

// FlowCanceled was added last, so that the states before it keep their
// numbers for a caller that stored them.
func TestFlowStateNumbers(t *testing.T) {
	t.Parallel()
	for s, want := range map[inspect.FlowState]string{0: "unknown", 1: "running", 2: "done", 3: "failed", 4: "canceled"} {
		if s.String() != want {
			t.Errorf("FlowState(%d) = %q; want %q", int(s), s, want)
		}
	}
}
