package tasks_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
	"github.com/worksteal/worksteal/telemetry"
)

// tracedRecruiter is a recruiter of its own that runs job inline, its
// spans going to tp.
func tracedRecruiter(t *testing.T, b *bundle, tp trace.TracerProvider, job recruiter.Job) *recruiter.Recruiter {
	t.Helper()
	rec, err := recruiter.New(b.rdb, recruiter.Config{Inline: true, Prefix: redistest.Prefix(t), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if err := rec.Register(job, recruiter.JobConfig{Rate: 1, Budget: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return rec
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

// wantMessaging checks a task span's messaging attributes.
func wantMessaging(t *testing.T, s sdktrace.ReadOnlySpan, kind trace.SpanKind, op, queueName, id string) {
	t.Helper()
	want := map[attribute.Key]string{
		"messaging.system":           telemetry.MessagingSystem,
		"messaging.operation.name":   op,
		"messaging.operation.type":   op,
		"messaging.destination.name": queueName,
		"messaging.message.id":       id,
	}
	for k, v := range want {
		if got := attrOf(s, k); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
	if s.SpanKind() != kind || s.Name() != op+" "+queueName {
		t.Errorf("span %q of kind %v, want %q of kind %v", s.Name(), s.SpanKind(), op+" "+queueName, kind)
	}
}

// A chain of 3 enqueued in a request and run by 3 recruiters: the
// enqueue's PRODUCER span is in the request's trace; each step's
// CONSUMER span is a child of the recruitment that ran it, and links to
// the enqueue (the first step) or to the step before.
func TestChainInTheTraces(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, nil, queue.Config{}, tasks.WithTracerProvider(tp))
	var started, steps atomic.Int32
	step := tasks.Define[int, int]("step")
	if err := step.Handle(b.mux, func(ctx context.Context, n int) (int, error) {
		started.Add(1)
		time.Sleep(200 * time.Millisecond) // time for the test to shut the recruiter down
		steps.Add(1)
		return n + 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	reqCtx, request := tp.Tracer("test").Start(ctx, "request")
	id, err := tasks.EnqueueChain(reqCtx, b.client, []tasks.Step{step.Step(1), step.Step(10), step.Step(100)})
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		// Each recruiter its own job of the queue, as each process has.
		job, err := b.mux.Job(b.q, jobs.DrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		r := tracedRecruiter(t, b, tp, job)
		// Once its step started, the recruiter shuts down: it runs no
		// other step (the ack would visit the queue's job at once), and
		// Shutdown waits for the slice in flight, which settles the step
		// and ends the spans. Enlist runs a slice inline: it returns when
		// the slice has.
		enlisting := make(chan struct{})
		go func() {
			defer close(enlisting)
			for started.Load() < int32(i+1) && ctx.Err() == nil {
				r.Enlist(ctx)
				time.Sleep(time.Millisecond)
			}
		}()
		testrig.Eventually(t, 10*time.Second, fmt.Sprintf("step %d started", i+1), func() bool {
			return started.Load() >= int32(i+1)
		})
		if err := r.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		<-enlisting
		if n := steps.Load(); n != int32(i+1) {
			for _, sp := range rec.Ended() {
				t.Logf("span %s %v, parent %v, %v", sp.Name(), sp.SpanContext().SpanID(), sp.Parent().SpanID(), sp.Attributes())
			}
			t.Fatalf("recruiter %d ran up to step %d, want %d alone", i+1, n, i+1)
		}
	}

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var producer sdktrace.ReadOnlySpan
	var consumers []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		spans[s.SpanContext().SpanID()] = s
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			producer = s
		case trace.SpanKindConsumer:
			consumers = append(consumers, s)
		}
	}
	if producer == nil || len(consumers) != 3 {
		t.Fatalf("%d spans ended: producer %v, %d consumers; want 1 and 3", len(spans), producer != nil, len(consumers))
	}
	if producer.Parent().SpanID() != request.SpanContext().SpanID() || producer.SpanContext().TraceID() != request.SpanContext().TraceID() {
		t.Errorf("the enqueue's span is not the request's child: parent %v", producer.Parent())
	}
	wantMessaging(t, producer, trace.SpanKindProducer, "send", b.q.Name(), id)
	// The consumers in the order they ran, each linked to the one before.
	linkedTo := producer.SpanContext()
	recruits := map[trace.SpanID]bool{}
	for i := range 3 {
		var run sdktrace.ReadOnlySpan
		for _, c := range consumers {
			if links := c.Links(); len(links) == 1 && links[0].SpanContext.Equal(linkedTo.WithRemote(true)) {
				run = c
			}
		}
		if run == nil {
			t.Fatalf("no run of step %d links to %v", i+1, linkedTo)
		}
		parent, ok := spans[run.Parent().SpanID()]
		if !ok || parent.Name() != telemetry.SpanRecruit || parent.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Fatalf("step %d's run is not a child of a recruitment: parent %v", i+1, run.Parent())
		}
		recruits[parent.SpanContext().SpanID()] = true
		wantID := attrOf(run, "messaging.message.id")
		if i == 0 && wantID != id {
			t.Errorf("step 1 ran as %s, want the chain's id %s", wantID, id)
		}
		wantMessaging(t, run, trace.SpanKindConsumer, "process", b.q.Name(), wantID)
		if got := attrOf(run, telemetry.AttrChainStep); got != fmt.Sprint(i+1) {
			t.Errorf("step %d's run says step %s", i+1, got)
		}
		linkedTo = run.SpanContext()
	}
	if len(recruits) != 3 {
		t.Errorf("the 3 steps ran in %d recruitments, want 3", len(recruits))
	}
}

// EnqueueMany is one PRODUCER span, to which every task's run links;
// a failed run's span says so.
func TestEnqueueManyInTheTraces(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, nil, queue.Config{MaxAttempts: 1}, tasks.WithTracerProvider(tp))
	if err := tasks.Define[int, int]("half").Handle(b.mux, func(ctx context.Context, n int) (int, error) {
		if n%2 == 1 {
			return 0, fmt.Errorf("odd %d", n)
		}
		return n / 2, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	if _, err := tasks.Define[int, int]("half").EnqueueMany(ctx, b.client, []int{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	b.drive(t, "4 tasks run", func() bool {
		d, _ := b.q.Depth(ctx)
		return d.Pending == 0 && d.Leased == 0 && d.Dead == 2
	})
	var producer trace.SpanContext
	failed, runs := 0, 0
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindProducer {
			producer = s.SpanContext()
			if got := attrOf(s, "messaging.batch.message_count"); got != "4" {
				t.Errorf("batch of %s, want 4", got)
			}
		}
	}
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindConsumer {
			continue
		}
		runs++
		if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != producer.SpanID() {
			t.Errorf("run %s links to %v, want the enqueue %v", attrOf(s, "messaging.message.id"), links, producer)
		}
		if s.Status().Code.String() == "Error" {
			failed++
		}
	}
	if runs != 4 || failed != 2 {
		t.Fatalf("%d runs, %d failed; want 4, 2 failed", runs, failed)
	}
}

// With a no-op provider, and with the otel global while none is set,
// nothing is traced: no trace context is stored beside the tasks. Not
// sampled, a span's context is stored all the same, so that the runs'
// sampling follows the enqueue's.
func TestTraceContextStoredOnlyWhenTraced(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		opt    tasks.Option
		stored bool
	}{
		{"global", nil, false},
		{"noop", tasks.WithTracerProvider(noop.NewTracerProvider()), false},
		{"never sampled", tasks.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t, nil, queue.Config{}, c.opt)
			ctx := testrig.Context(t, 30*time.Second)
			id, err := tasks.Define[int, int]("t").Enqueue(ctx, b.client, 1)
			if err != nil {
				t.Fatal(err)
			}
			it, err := b.q.Claim(ctx, 1)
			if err != nil || len(it) != 1 {
				t.Fatalf("Claim = %v, %v", it, err)
			}
			if stored := it[0].Trace != ""; stored != c.stored || it[0].ID != id {
				t.Fatalf("claimed %s with trace %q; want one stored: %v", it[0].ID, it[0].Trace, c.stored)
			}
			if c.stored && it[0].Trace[53:] != "00" {
				t.Fatalf("trace %q of a span not sampled, want flags 00", it[0].Trace)
			}
		})
	}
}

// A fan-out is one PRODUCER span; its children's runs link to it, and
// its final step's run to it and to each child's run. Once the final
// step is acked, its trace key is gone.
func TestFanOutInTheTraces(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, nil, queue.Config{}, tasks.WithTracerProvider(tp))
	var finals atomic.Int32
	part, total := tasks.Define[int, int]("part"), tasks.Define[int, int]("total")
	if err := part.Handle(b.mux, func(_ context.Context, n int) (int, error) { return n, nil }); err != nil {
		t.Fatal(err)
	}
	if err := total.Handle(b.mux, func(context.Context, int) (int, error) { finals.Add(1); return 0, nil }); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	id, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{part.Step(1), part.Step(2)}, total.Step(0))
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "the fan-out's final step run", func() bool { return finals.Load() == 1 })
	var send trace.SpanContext
	runs := map[string]int{}
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindProducer {
			send = s.SpanContext()
			wantMessaging(t, s, trace.SpanKindProducer, "send", b.q.Name(), id)
		}
	}
	var children []trace.SpanID
	var final sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindConsumer {
			continue
		}
		typ := attrOf(s, telemetry.AttrTaskType)
		runs[typ]++
		links := s.Links()
		if typ == "total" {
			final = s
			continue
		}
		children = append(children, s.SpanContext().SpanID())
		if len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanID() || links[0].SpanContext.TraceID() != send.TraceID() {
			t.Errorf("run of %s links to %v, want the fan-out's enqueue %v", attrOf(s, "messaging.message.id"), links, send)
		}
	}
	if runs["part"] != 2 || runs["total"] != 1 {
		t.Fatalf("runs by type %v, want 2 part and 1 total", runs)
	}
	var linked []trace.SpanID
	for _, l := range final.Links() {
		linked = append(linked, l.SpanContext.SpanID())
	}
	want := append([]trace.SpanID{send.SpanID()}, children...)
	slices.SortFunc(linked[1:], func(a, b trace.SpanID) int { return bytes.Compare(a[:], b[:]) })
	slices.SortFunc(want[1:], func(a, b trace.SpanID) int { return bytes.Compare(a[:], b[:]) })
	if !slices.Equal(linked, want) {
		t.Errorf("the final step links to %v, want the enqueue, then its children's runs: %v", linked, want)
	}
	if n, err := b.rdb.Exists(ctx, "{"+b.q.Config().Prefix+":q:"+b.q.Name()+"}:trace:"+id).Result(); n != 0 || err != nil {
		t.Errorf("the final step's trace key is left after its ack: %d, %v", n, err)
	}
}
