package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

type addArgs struct {
	A, B  int
	Label string
}

type sum struct {
	Sum   int
	Label string
}

func add(_ context.Context, a addArgs) (sum, error) { return sum{Sum: a.A + a.B, Label: a.Label}, nil }

// handle, enqueue, enqueueMany, stepOf and pipeOf are the Task methods
// for the tests' many ad-hoc types, A inferred from the arguments.
func handle[A, R any](m *tasks.Mux, typ string, h func(context.Context, A) (R, error)) error {
	return tasks.Define[A, R](typ).Handle(m, h)
}

func enqueue[A any](ctx context.Context, c *tasks.Client, typ string, args A, opts ...tasks.EnqueueOption) (string, error) {
	return tasks.Define[A, any](typ).Enqueue(ctx, c, args, opts...)
}

func enqueueMany[A any](ctx context.Context, c *tasks.Client, typ string, args []A, opts ...tasks.EnqueueOption) ([]string, error) {
	return tasks.Define[A, any](typ).EnqueueMany(ctx, c, args, opts...)
}

func stepOf(typ string, args any) tasks.Step { return tasks.Define[any, any](typ).Step(args) }

func pipeOf(typ string) tasks.Step { return tasks.Define[any, any](typ).Pipe() }

func mustHandle[A, R any](t testing.TB, m *tasks.Mux, typ string, h func(context.Context, A) (R, error)) {
	t.Helper()
	if err := handle(m, typ, h); err != nil {
		t.Fatalf("Handle(%q): %v", typ, err)
	}
}

func mustEnqueue[A any](t testing.TB, c *tasks.Client, typ string, args A) string {
	t.Helper()
	id, err := enqueue(context.Background(), c, typ, args)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", typ, err)
	}
	return id
}

// wantDead checks that id is a dead letter whose cause holds each of want.
func wantDead(t *testing.T, q *queue.Queue, id string, want ...string) {
	t.Helper()
	dead, err := testrig.DeadLetters(context.Background(), q, queue.BatchMax)
	if err != nil {
		t.Fatalf("Dead: %v", err)
	}
	for _, d := range dead {
		if d.ID != id {
			continue
		}
		for _, w := range want {
			if !strings.Contains(d.Cause, w) {
				t.Fatalf("dead %s: cause %q, want it to hold %q", id, d.Cause, w)
			}
		}
		return
	}
	t.Fatalf("%s is not among the dead letters %+v", id, dead)
}

// Typed arguments and results travel through a real recruiter's slices:
// 50 tasks, each result decodes to its own arguments' sum and label.
func TestRoundTripThroughRecruiter(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	mustHandle(t, b.mux, "add", add)
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = mustEnqueue(t, b.client, "add", addArgs{A: i, B: 1000, Label: fmt.Sprintf("n%d ü\"", i)})
	}
	rec, err := recruiter.New(b.rdb, recruiter.Config{Inline: true, Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if err := rec.Register(b.job, recruiter.JobConfig{Rate: 1, Budget: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	testrig.Eventually(t, 20*time.Second, "50 tasks done", func() bool {
		rec.Enlist(ctx)
		d, err := b.q.Depth(ctx)
		return err == nil && d == queue.Depth{}
	})
	for i, id := range ids {
		res, err := b.q.Result(ctx, id)
		if err != nil {
			t.Fatalf("Result(%s): %v", id, err)
		}
		want := fmt.Sprintf(`{"Sum":%d,"Label":%q}`, i+1000, fmt.Sprintf("n%d ü\"", i))
		if string(res) != want {
			t.Fatalf("result of task %d = %s, want %s", i, res, want)
		}
	}
	if js := rec.Stats().Jobs[0]; js.Name != "tasks.tasks" || js.Items != 50 || js.Failed() != 0 {
		t.Fatalf("recruiter stats %+v; want 50 items of job tasks.tasks, no failure", js)
	}
}

// Call returns the handler's typed result, and its context reaches the
// handler.
func TestCall(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	mustHandle(t, b.mux, "add", add)
	mustHandle(t, b.mux, "upper", func(ctx context.Context, s string) ([]string, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("handler's ctx has no deadline")
		}
		return strings.Fields(strings.ToUpper(s)), nil
	})
	c1 := goCall[addArgs, sum](t, b.client, "add", addArgs{A: 2, B: 40, Label: "x"})
	c2 := goCall[string, []string](t, b.client, "upper", "a bc")
	b.drive(t, "both calls returned", func() bool { return c1.finished() && c2.finished() })
	if c1.err != nil || c1.result != (sum{Sum: 42, Label: "x"}) {
		t.Fatalf("Call(add) = %+v, %v; want {42 x}", c1.result, c1.err)
	}
	if c2.err != nil || strings.Join(c2.result, ",") != "A,BC" {
		t.Fatalf("Call(upper) = %q, %v; want [A BC]", c2.result, c2.err)
	}
}

// A handler's error fails the attempt: the task is tried MaxAttempts
// times, then dead-lettered with the error as its cause, which Call
// returns wrapping queue.ErrDead.
func TestHandlerErrorDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	var attempts atomic.Int32
	mustHandle(t, b.mux, "fail", func(_ context.Context, n int) (int, error) {
		attempts.Add(1)
		return 0, fmt.Errorf("no luck with %d", n)
	})
	cl := goCall[int, int](t, b.client, "fail", 7)
	b.drive(t, "the call returned", cl.finished)
	if !errors.Is(cl.err, queue.ErrDead) || !strings.Contains(cl.err.Error(), "no luck with 7") {
		t.Fatalf("Call = %v; want queue.ErrDead with the handler's cause", cl.err)
	}
	if n := attempts.Load(); n != 3 {
		t.Fatalf("handler called %d times, want MaxAttempts (3)", n)
	}
}

// Tasks that cannot run (an unknown type, arguments of the wrong shape, an
// envelope that is not one, another codec, an envelope version to come)
// end in the dead letters with their cause, while the tasks around them
// are done: the queue keeps draining.
func TestUndecodableTasksDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	mustHandle(t, b.mux, "add", add)
	ctx := testrig.Context(t, 30*time.Second)
	raw := func(payload []byte) string {
		id, err := b.q.Enqueue(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	good1 := mustEnqueue(t, b.client, "add", addArgs{A: 1})
	unknown := mustEnqueue(t, b.client, "nope", addArgs{A: 1})
	badArgs := mustEnqueue(t, b.client, "add", "not an object")
	notEnvelope := raw([]byte("plain bytes"))
	otherCodec := raw(tasks.EncodeEnvelope("add", "gob", []byte(`{"A":1}`)))
	nextVersion := raw(append([]byte{3}, tasks.EncodeEnvelope("add", "json", []byte(`{}`))[1:]...))
	good2 := mustEnqueue(t, b.client, "add", addArgs{A: 2})

	b.drive(t, "good tasks done, the others dead", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && d.Dead == 5 && d.Pending+d.Delayed+d.Leased == 0
	})
	wantDead(t, b.q, unknown, tasks.ErrUnknownType.Error(), "nope")
	wantDead(t, b.q, badArgs, tasks.ErrDecode.Error(), "arguments of add")
	wantDead(t, b.q, notEnvelope, tasks.ErrDecode.Error(), "version")
	wantDead(t, b.q, otherCodec, tasks.ErrDecode.Error(), `codec "gob"`)
	wantDead(t, b.q, nextVersion, tasks.ErrDecode.Error(), "version 3")
	for id, want := range map[string]string{good1: `{"Sum":1,"Label":""}`, good2: `{"Sum":2,"Label":""}`} {
		if res, err := b.q.Result(ctx, id); err != nil || string(res) != want {
			t.Fatalf("Result(%s) = %s, %v; want %s", id, res, err, want)
		}
	}
	// Call reports the cause of an unknown type as a dead task.
	cl := goCall[int, int](t, b.client, "still-nope", 1)
	b.drive(t, "the call returned", cl.finished)
	if !errors.Is(cl.err, queue.ErrDead) || !strings.Contains(cl.err.Error(), tasks.ErrUnknownType.Error()) {
		t.Fatalf("Call(unknown type) = %v; want queue.ErrDead with ErrUnknownType's cause", cl.err)
	}
}

// reverseCodec is a codec of its own: JSON, its bytes reversed, so that
// neither a JSON Mux nor a JSON Client can read it.
type reverseCodec struct{}

func (reverseCodec) Name() string { return "reverse-json" }
func (reverseCodec) Marshal(v any) ([]byte, error) {
	b, err := tasks.JSONForTest(v)
	reverse(b)
	return b, err
}
func (reverseCodec) Unmarshal(data []byte, v any) error {
	b := append([]byte(nil), data...)
	reverse(b)
	return tasks.UnJSONForTest(b, v)
}

func reverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// A custom codec encodes the arguments and the result, and its name
// travels in the envelope.
func TestCustomCodec(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{}, nil, tasks.WithCodec(reverseCodec{}))
	mustHandle(t, b.mux, "add", add)
	id := mustEnqueue(t, b.client, "add", addArgs{A: 3, B: 4, Label: "r"})
	payload, err := b.q.Value(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	typ, codec, args, err := tasks.DecodeEnvelope(payload)
	if err != nil || typ != "add" || codec != "reverse-json" || string(args) != `}"r":"lebaL",4:"B",3:"A"{` {
		t.Fatalf("envelope = %q %q %s, %v", typ, codec, args, err)
	}
	cl := goCall[addArgs, sum](t, b.client, "add", addArgs{A: 5, B: 6, Label: "s"})
	b.drive(t, "the call returned", cl.finished)
	if cl.err != nil || cl.result != (sum{Sum: 11, Label: "s"}) {
		t.Fatalf("Call = %+v, %v; want {11 s}", cl.result, cl.err)
	}
	if res, err := b.q.Result(context.Background(), id); err != nil || string(res) != `}"r":"lebaL",7:"muS"{` {
		t.Fatalf("Result = %s, %v; want the reversed JSON of {7 r}", res, err)
	}
}

// The API's refusals: each wraps its sentinel and changes nothing.
func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxPayload: 64})
	ctx := testrig.Context(t, 30*time.Second)
	mustHandle(t, b.mux, "add", add)
	for _, tc := range []struct {
		what string
		err  error
		want error
	}{
		{"duplicate type", handle(b.mux, "add", add), tasks.ErrDuplicateType},
		{"invalid type", handle(b.mux, "a:b", add), tasks.ErrInvalidArgument},
		{"nil handler", tasks.Define[int, int]("x").Handle(b.mux, nil), tasks.ErrInvalidArgument},
		{"nil Mux", handle(nil, "x", add), tasks.ErrInvalidArgument},
		{"Job of nil queue", second(b.mux.Job(nil, jobs.DrainConfig{})), tasks.ErrInvalidArgument},
		{"Job with a codec's bad name", second(tasks.NewMux(tasks.WithCodec(badName{})).Job(b.q, jobs.DrainConfig{})), tasks.ErrInvalidArgument},
		{"Client of nil queue", second(tasks.NewClient(nil)), tasks.ErrInvalidArgument},
		{"Client with a codec's bad name", second(tasks.NewClient(b.q, tasks.WithCodec(badName{}))), tasks.ErrInvalidArgument},
		{"Enqueue of invalid type", second(enqueue(ctx, b.client, "", 1)), tasks.ErrInvalidArgument},
		{"Enqueue too large", second(enqueue(ctx, b.client, "add", strings.Repeat("x", 60))), queue.ErrPayloadTooLarge},
		{"Call of invalid type", second(tasks.Define[int, int]("a b").Call(ctx, b.client, 1)), tasks.ErrInvalidArgument},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.what, tc.err, tc.want)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want an empty queue", d, err)
	}
	// A result that does not decode into the caller's R.
	cl := goCall[addArgs, []int](t, b.client, "add", addArgs{A: 1})
	b.drive(t, "the call returned", cl.finished)
	if !errors.Is(cl.err, tasks.ErrDecode) || !strings.Contains(cl.err.Error(), "result of add") {
		t.Fatalf("Call into the wrong type = %v; want ErrDecode", cl.err)
	}
}

type badName struct{ reverseCodec }

func (badName) Name() string { return "no spaces" }

func second[T any](_ T, err error) error { return err }

// The job's name is "tasks.QUEUE" unless the config names it; a queue
// name too long for that is cut to a valid job name.
func TestJobName(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	mux := tasks.NewMux()
	long := strings.Repeat("q", 128)
	for _, tc := range []struct {
		queue, name, want string
	}{
		{"orders", "", "tasks.orders"},
		{"orders", "mine", "mine"},
		{long, "", ("tasks." + long)[:128]},
	} {
		job, err := mux.Job(newQueue(t, rdb, tc.queue, queue.Config{}), jobs.DrainConfig{Batching: jobs.Batching{Name: tc.name}})
		if err != nil || job.Name() != tc.want {
			t.Fatalf("Job of %q named %q: %v, %v; want %q", tc.queue, tc.name, job, err, tc.want)
		}
	}
}

// Handlers registered while the job runs are safe (the race detector
// watches) and are used by the next items.
func TestHandleWhileRunning(t *testing.T) {
	t.Parallel()
	// Tasks that run before their handler is there are retried at once,
	// up to 100 times.
	b := setup(t, nil, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 100})
	const types = 20
	for i := range types {
		mustEnqueue(t, b.client, fmt.Sprintf("t%d", i), i)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range types {
			mustHandle(t, b.mux, fmt.Sprintf("t%d", i), func(_ context.Context, n int) (int, error) { return n * 2, nil })
		}
	})
	ctx := testrig.Context(t, 30*time.Second)
	b.drive(t, "every task done", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && d == queue.Depth{}
	})
	wg.Wait()
}
