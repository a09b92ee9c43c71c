package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/tasks"
)

// A Raw task's bytes pass the codec by, and its tasks are a Defined
// Task's: a typed handler decodes what Raw enqueues, a Raw handler gets
// what a typed enqueue encoded, a Raw Call returns the result as the
// handler's codec encoded it; so do its EnqueueMany and its Steps and
// Pipe in a chain.
func TestRaw(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ctx := testrig.Context(t, 30*time.Second)
	if err := addTask.Handle(b.mux, add); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var echoed []string
	echo := tasks.Raw("echo")
	if err := echo.Handle(b.mux, func(_ context.Context, args []byte) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		echoed = append(echoed, string(args))
		return append(args, args...), nil // the arguments' memory is the handler's
	}); err != nil {
		t.Fatal(err)
	}
	same := tasks.Raw("same")
	if err := same.Handle(b.mux, func(_ context.Context, args []byte) ([]byte, error) { return args, nil }); err != nil {
		t.Fatal(err)
	}

	rawAdd := tasks.Raw("add")
	call := goRun(t, func(ctx context.Context) ([]byte, error) {
		return rawAdd.Call(ctx, b.client, []byte(`{"A":2,"B":3,"Label":"raw"}`))
	})
	typedToRaw := goRun(t, func(ctx context.Context) (int, error) {
		return tasks.Define[int, int]("echo").Call(ctx, b.client, 7) // 7 twice: 77
	})
	chain := goRun(t, func(ctx context.Context) (sum, error) {
		return tasks.CallChain[sum](ctx, b.client, []tasks.Step{same.Step([]byte(`{"A":1,"B":1,"Label":"chain"}`)), rawAdd.Pipe()})
	})
	ids, err := echo.EnqueueMany(ctx, b.client, [][]byte{[]byte(`"a"`), []byte(`"b"`)})
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "every call returned", func() bool { return call.finished() && typedToRaw.finished() && chain.finished() })

	if call.err != nil || string(call.result) != `{"Sum":5,"Label":"raw"}` {
		t.Errorf("Raw(add).Call = %s, %v; want the handler's JSON", call.result, call.err)
	}
	if typedToRaw.err != nil || typedToRaw.result != 77 {
		t.Errorf("typed Call of a Raw handler = %d, %v; want 77", typedToRaw.result, typedToRaw.err)
	}
	if chain.err != nil || chain.result != (sum{Sum: 2, Label: "chain"}) {
		t.Errorf("chain of a Raw Step and a Raw Pipe = %+v, %v; want {2 chain}", chain.result, chain.err)
	}
	for i, want := range []string{`"a""a"`, `"b""b"`} {
		if res, err := b.q.Result(ctx, ids[i]); err != nil || string(res) != want {
			t.Errorf("Result of EnqueueMany's task %d = %s, %v; want %s", i+1, res, err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(echoed)
	if got := strings.Join(echoed, " "); got != `"a" "b" 7` {
		t.Errorf("Raw handler's arguments: %s; want the typed enqueue's JSON and the raw bytes", got)
	}
	// One type, one handler: a Raw and a Defined Task are the same type.
	if err := tasks.Raw("add").Handle(b.mux, func(_ context.Context, a []byte) ([]byte, error) { return a, nil }); !errors.Is(err, tasks.ErrDuplicateType) {
		t.Errorf("Raw(add).Handle after addTask.Handle = %v, want ErrDuplicateType", err)
	}
}

// Bytes that are not in the codec's encoding are enqueued as they are and
// fail where they are decoded; a Raw result that is not decodes as bytes.
func TestRawBytesNotInTheCodec(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ctx := testrig.Context(t, 30*time.Second)
	if err := addTask.Handle(b.mux, add); err != nil {
		t.Fatal(err)
	}
	if err := tasks.Raw("plain").Handle(b.mux, func(_ context.Context, args []byte) ([]byte, error) {
		return []byte("not json: " + string(args)), nil
	}); err != nil {
		t.Fatal(err)
	}
	bad, err := tasks.Raw("add").Enqueue(ctx, b.client, []byte("not json"))
	if err != nil {
		t.Fatal(err)
	}
	raw := goRun(t, func(ctx context.Context) ([]byte, error) {
		return tasks.Raw("plain").Call(ctx, b.client, []byte("x"))
	})
	typed := goRun(t, func(ctx context.Context) (string, error) {
		return tasks.Define[string, string]("plain").Call(ctx, b.client, "y")
	})
	b.drive(t, "the calls returned", func() bool { return raw.finished() && typed.finished() })
	b.drive(t, "the bad task dead", func() bool { d, err := b.q.Depth(ctx); return err == nil && d.Dead == 1 })
	wantDead(t, b.q, bad, tasks.ErrDecode.Error(), "arguments of add")
	if raw.err != nil || string(raw.result) != "not json: x" {
		t.Errorf("Raw Call = %q, %v; want the result as it is", raw.result, raw.err)
	}
	if !errors.Is(typed.err, tasks.ErrDecode) {
		t.Errorf("typed Call of a result that is not JSON = %q, %v; want ErrDecode", typed.result, typed.err)
	}
}

// HandleUnknown serves the types that no handler has, with their type and
// bytes: its result is the task's as it is, its error fails the attempt
// as a handler's does, and ErrUnknownType leaves a type unserved, as
// without it. Its attempts count under "*".
func TestHandleUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ctx := testrig.Context(t, 30*time.Second)
	if err := addTask.Handle(b.mux, add); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	err := b.mux.HandleUnknown(func(_ context.Context, typ string, args []byte) ([]byte, error) {
		mu.Lock()
		seen[typ] = string(args)
		mu.Unlock()
		switch {
		case strings.HasPrefix(typ, "billing."):
			return []byte(`"billed ` + typ + `"`), nil
		case typ == "flaky":
			return nil, errors.New("flaky fails")
		}
		return nil, fmt.Errorf("%w: %s", tasks.ErrUnknownType, typ)
	})
	if err != nil {
		t.Fatal(err)
	}
	billed := goRun(t, func(ctx context.Context) (string, error) {
		return tasks.Define[addArgs, string]("billing.invoice").Call(ctx, b.client, addArgs{A: 1})
	})
	rawBilled := goRun(t, func(ctx context.Context) ([]byte, error) {
		return tasks.Raw("billing.refund").Call(ctx, b.client, []byte(`{"n":2}`))
	})
	known := goRun(t, func(ctx context.Context) (sum, error) {
		return addTask.Call(ctx, b.client, addArgs{A: 2, B: 2})
	})
	flaky := mustEnqueue(t, b.client, "flaky", 1)
	other := mustEnqueue(t, b.client, "other", 1)
	b.drive(t, "the calls returned", func() bool { return billed.finished() && rawBilled.finished() && known.finished() })
	b.drive(t, "the others dead", func() bool { d, err := b.q.Depth(ctx); return err == nil && d.Dead == 2 })

	if billed.err != nil || billed.result != "billed billing.invoice" {
		t.Errorf("typed Call served by HandleUnknown = %q, %v", billed.result, billed.err)
	}
	if rawBilled.err != nil || string(rawBilled.result) != `"billed billing.refund"` {
		t.Errorf("Raw Call served by HandleUnknown = %s, %v", rawBilled.result, rawBilled.err)
	}
	if known.err != nil || known.result != (sum{Sum: 4}) {
		t.Errorf("a known type's Call = %+v, %v; want its own handler's result", known.result, known.err)
	}
	wantDead(t, b.q, flaky, "flaky fails")
	wantDead(t, b.q, other, tasks.ErrUnknownType.Error(), "other")
	mu.Lock()
	if seen["billing.invoice"] != `{"A":1,"B":0,"Label":""}` || seen["billing.refund"] != `{"n":2}` || seen["add"] != "" {
		t.Errorf("HandleUnknown's arguments by type: %q; want the encoded arguments of the unknown types only", seen)
	}
	mu.Unlock()

	// billing: 2 done; flaky and other: 3 attempts each, the third dead.
	want := []tasks.TypeStats{{Type: "*", Done: 2, Retried: 4, Dead: 2}, {Type: "add", Done: 1}}
	if got := b.mux.Stats(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Stats = %+v; want %+v", got, want)
	}
	for what, err := range map[string]error{
		"a second handler": b.mux.HandleUnknown(func(context.Context, string, []byte) ([]byte, error) { return nil, nil }),
		"nil handler":      tasks.NewMux().HandleUnknown(nil),
		"nil Mux":          (*tasks.Mux)(nil).HandleUnknown(func(context.Context, string, []byte) ([]byte, error) { return nil, nil }),
	} {
		want := tasks.ErrInvalidArgument
		if what == "a second handler" {
			want = tasks.ErrDuplicateType
		}
		if !errors.Is(err, want) {
			t.Errorf("HandleUnknown with %s: %v, want %v", what, err, want)
		}
	}
}
