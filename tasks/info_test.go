package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// infoLog keeps the Info of each attempt, by the task's label.
type infoLog struct {
	mu  sync.Mutex
	got map[string][]tasks.Info
}

func (l *infoLog) note(t *testing.T, ctx context.Context, label string) {
	info, ok := tasks.InfoFrom(ctx)
	if !ok {
		t.Errorf("%s: InfoFrom(handler's ctx) = false", label)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got[label] = append(l.got[label], info)
}

func (l *infoLog) of(label string) []tasks.Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]tasks.Info(nil), l.got[label]...)
}

// Every handler a Mux runs, typed, Raw or HandleUnknown's, finds its task
// in its context: id, type, queue, attempts (a retry's second, a task's
// own limit), the enqueue time (kept by the retry) and a chain's place.
// No other context has one.
func TestInfoFromReachesEveryHandler(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	l := &infoLog{got: map[string][]tasks.Info{}}
	mustHandle(t, b.mux, "typed", func(ctx context.Context, a addArgs) (sum, error) {
		l.note(t, ctx, a.Label)
		if a.Label == "retried" && len(l.of(a.Label)) == 1 {
			return sum{}, errors.New("first attempt fails")
		}
		return sum{Sum: a.A + a.B}, nil
	})
	if err := tasks.Raw("raw").Handle(b.mux, func(ctx context.Context, args []byte) ([]byte, error) {
		l.note(t, ctx, "raw")
		return args, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.mux.HandleUnknown(func(ctx context.Context, typ string, args []byte) ([]byte, error) {
		l.note(t, ctx, "unknown")
		return args, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := time.Now().Truncate(time.Millisecond)
	typed := mustEnqueueWith(t, b.client, "typed", addArgs{Label: "retried"}, tasks.Attempts(4))
	raw, err := tasks.Raw("raw").Enqueue(ctx, b.client, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	other := mustEnqueue(t, b.client, "someone.else", addArgs{})
	chain, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{
		stepOf("typed", addArgs{Label: "step1"}), stepOf("typed", addArgs{Label: "step2"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	b.drive(t, "every task done", func() bool { return len(l.of("step2")) == 1 && len(l.of("retried")) == 2 })

	if _, ok := tasks.InfoFrom(ctx); ok {
		t.Error("InfoFrom(context.Background()) = true")
	}
	retried := l.of("retried")
	for i, got := range retried {
		if got.ID != typed || got.Type != "typed" || got.Queue != b.q.Name() || got.Priority != "default" || got.Attempt != i+1 || got.MaxAttempts != 4 ||
			got.ChainID != "" || got.Step != 0 || got.Steps != 0 || got.LastAttempt() {
			t.Errorf("attempt %d: Info = %+v, want task %s of type typed on %s, attempt %d of 4, no chain", i+1, got, typed, b.q.Name(), i+1)
		}
		if got.EnqueuedAt.Before(before) || got.EnqueuedAt.After(after) {
			t.Errorf("attempt %d: EnqueuedAt %v, want in [%v, %v]", i+1, got.EnqueuedAt, before, after)
		}
	}
	if got := l.of("raw")[0]; got.ID != raw || got.Type != "raw" || got.Attempt != 1 || got.MaxAttempts != 3 {
		t.Errorf("Raw handler's Info = %+v, want %s of type raw, attempt 1 of the queue's 3", got, raw)
	}
	if got := l.of("unknown")[0]; got.ID != other || got.Type != "someone.else" {
		t.Errorf("HandleUnknown's Info = %+v, want %s of its own type someone.else", got, other)
	}
	s1, s2 := l.of("step1")[0], l.of("step2")[0]
	if s1.ID != chain || s1.ChainID != chain || s1.Step != 1 || s1.Steps != 2 {
		t.Errorf("chain's step 1 Info = %+v, want task and chain %s, step 1 of 2", s1, chain)
	}
	if s2.ID == chain || s2.ChainID != chain || s2.Step != 2 || s2.Steps != 2 || s2.EnqueuedAt.Before(s1.EnqueuedAt) {
		t.Errorf("chain's step 2 Info = %+v, want a task of its own in chain %s, step 2 of 2, enqueued after step 1", s2, chain)
	}
}

// A jobs.Drain handler reads its item's enqueue time from the item.
func TestItemEnqueuedAt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	before := time.Now().Truncate(time.Millisecond)
	id, err := b.q.Enqueue(context.Background(), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	items, err := b.q.Claim(context.Background(), 1)
	if err != nil || len(items) != 1 || items[0].ID != id {
		t.Fatalf("Claim = %+v, %v; want %s", items, err, id)
	}
	if got := items[0].EnqueuedAt(); got.Before(before) || got.After(after) {
		t.Errorf("EnqueuedAt = %v, want in [%v, %v]", got, before, after)
	}
	if got := (queue.Item{ID: "by-hand"}).EnqueuedAt(); !got.IsZero() {
		t.Errorf("EnqueuedAt of an id made by hand = %v, want zero", got)
	}
}

// A claimed task carries the lane it was claimed from, also when its
// type's limit set it aside first, and a handler reads it in its Info.
func TestInfoPriority(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := context.Background()
	if err := b.q.SetPriorities(ctx, map[string]int{"critical": 3}); err != nil {
		t.Fatal(err)
	}
	if err := tasks.Raw("limited").SetLimit(ctx, b.client, tasks.Limit{Running: 1}); err != nil {
		t.Fatal(err)
	}
	first := mustEnqueueWith(t, b.client, "limited", 1, tasks.Priority("critical"))
	parked := mustEnqueueWith(t, b.client, "limited", 2, tasks.Priority("critical"))
	plain := mustEnqueue(t, b.client, "plain", 3)
	items, err := b.q.Claim(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range items {
		got[it.ID] = it.Priority
	}
	if len(items) != 2 || got[first] != "critical" || got[plain] != queue.DefaultPriority {
		t.Fatalf("first claim: priorities by id %v, want %s critical and %s default (%s set aside)", got, first, plain, parked)
	}
	outcomes := make([]queue.Settlement, len(items))
	for i, it := range items {
		outcomes[i] = queue.Settlement{Item: it}
	}
	if _, err := b.q.Settle(ctx, outcomes...); err != nil {
		t.Fatal(err)
	}
	l := &infoLog{got: map[string][]tasks.Info{}}
	mustHandle(t, b.mux, "limited", func(ctx context.Context, _ int) (int, error) { l.note(t, ctx, "parked"); return 0, nil })
	b.drive(t, "the set-aside task run", func() bool { return len(l.of("parked")) == 1 })
	if info := l.of("parked")[0]; info.ID != parked || info.Priority != "critical" {
		t.Errorf("set-aside task's Info: %s of priority %q, want %s of critical", info.ID, info.Priority, parked)
	}
}
