package tasks_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// serve runs b.mux.Serve on b.q in the background; the returned func
// ends its context and waits for Serve's return.
func serve(t *testing.T, b *bundle, cfg tasks.WorkerConfig) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.mux.Serve(ctx, b.q, cfg) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return 30s after its context ended")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// taskRuns counts each task's runs and the attempts they saw.
type taskRuns struct {
	mu       sync.Mutex
	byID     map[string]int
	attempts map[int]int // attempt → runs
}

func newRuns() *taskRuns { return &taskRuns{byID: map[string]int{}, attempts: map[int]int{}} }

func (r *taskRuns) add(ctx context.Context) {
	info, _ := tasks.InfoFrom(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[info.ID]++
	r.attempts[info.Attempt]++
}

func (r *taskRuns) count() (tasks, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.byID {
		total += n
	}
	return len(r.byID), total
}

// TestServeRunsEachTaskOnce: a worker runs every task of a backlog and
// every task enqueued while it waits, each once, at attempt 1.
func TestServeRunsEachTaskOnce(t *testing.T) {
	b := setup(t, nil, queue.Config{})
	r := newRuns()
	mustHandle(t, b.mux, "work", func(ctx context.Context, n int) (int, error) {
		r.add(ctx)
		time.Sleep(time.Millisecond)
		return n, nil
	})
	ctx := context.Background()
	for i := range 500 {
		mustEnqueue(t, b.client, "work", i)
	}
	stop := serve(t, b, tasks.WorkerConfig{Concurrency: 16})
	testrig.Eventually(t, 20*time.Second, "the backlog of 500 ran", func() bool { n, _ := r.count(); return n == 500 })
	// Idle now: an enqueue wakes it.
	mustEnqueue(t, b.client, "work", 500)
	testrig.Eventually(t, 10*time.Second, "the task enqueued while idle ran", func() bool { n, _ := r.count(); return n == 501 })
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	n, total := r.count()
	if n != 501 || total != 501 || r.attempts[1] != 501 {
		t.Errorf("ran %d tasks in %d runs, %d at attempt 1; want 501 each", n, total, r.attempts[1])
	}
	d, err := b.q.Depth(ctx)
	if err != nil || d.Pending+d.Leased+d.Delayed+d.Dead != 0 {
		t.Errorf("Depth = %+v, %v: want an empty queue", d, err)
	}
}

// TestServeShutdownFinishesStartedAndHandsBackTheRest: SIGTERM's path
// with 200 tasks in flight and 1,000 pending. Once Serve's context ends
// no task starts, the 200 finish and are acked, and the 1,000 wait in
// pending with their attempts unused: a second worker runs each once, at
// attempt 1. Nothing is lost, nothing runs twice.
func TestServeShutdownFinishesStartedAndHandsBackTheRest(t *testing.T) {
	b := setup(t, nil, queue.Config{Lease: 30 * time.Second})
	r := newRuns()
	release := make(chan struct{})
	var started atomic.Int64
	var stopping atomic.Bool
	var startedAfterStop atomic.Int64
	mustHandle(t, b.mux, "slow", func(ctx context.Context, n int) (int, error) {
		if stopping.Load() {
			startedAfterStop.Add(1)
		}
		started.Add(1)
		r.add(ctx)
		<-release
		return n, nil
	})
	ctx := context.Background()
	ids := make([]int, 1200)
	if _, err := enqueueMany(ctx, b.client, "slow", ids[:1000]); err != nil {
		t.Fatal(err)
	}
	if _, err := enqueueMany(ctx, b.client, "slow", ids[1000:]); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, b, tasks.WorkerConfig{Concurrency: 200})
	testrig.Eventually(t, 20*time.Second, "200 handlers running", func() bool { return started.Load() == 200 })
	stopping.Store(true)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// Serve waits for the started handlers.
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) while 200 handlers ran", err)
	case <-time.After(300 * time.Millisecond):
	}
	d, err := b.q.Depth(ctx)
	if err != nil || d.Leased != 200 || d.Pending != 1000 {
		t.Errorf("during the shutdown, Depth = %+v, %v: want 200 leased (started) and 1,000 pending (handed back or never claimed)", d, err)
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n := startedAfterStop.Load(); n != 0 {
		t.Errorf("%d tasks started after Serve's context ended", n)
	}
	if d, err = b.q.Depth(ctx); err != nil || d.Leased != 0 || d.Pending != 1000 || d.Dead != 0 {
		t.Errorf("after Serve returned, Depth = %+v, %v: want the 200 acked and 1,000 pending", d, err)
	}
	// The rest, on a second worker: each once, at attempt 1.
	serve(t, b, tasks.WorkerConfig{Concurrency: 200})
	testrig.Eventually(t, 30*time.Second, "all 1,200 ran", func() bool { n, _ := r.count(); return n == 1200 })
	if n, total := r.count(); total != 1200 || r.attempts[1] != 1200 {
		t.Errorf("%d tasks ran %d times, %d at attempt 1: want each once, at attempt 1", n, total, r.attempts[1])
	}
}

// TestServeShutdownDeadline: handlers that outlive the ShutdownTimeout
// (or an Abort) see their contexts end with ErrWorkerStopped; their
// tasks go back with their attempts unused, and no failure is reported
// above INFO.
func TestServeShutdownDeadline(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := "ShutdownTimeout"
		if abort {
			name = "Abort"
		}
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			var logMu sync.Mutex
			logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			b := setup(t, nil, queue.Config{Lease: 30 * time.Second, MaxAttempts: 1}, tasks.WithLogger(logger))
			r := newRuns()
			var started, stoppedCause atomic.Int64
			mustHandle(t, b.mux, "stuck", func(ctx context.Context, n int) (int, error) {
				r.add(ctx)
				started.Add(1)
				info, _ := tasks.InfoFrom(ctx)
				if info.Attempt > 1 || n > 0 {
					return n, nil // the second run: done
				}
				<-ctx.Done()
				if errors.Is(context.Cause(ctx), tasks.ErrWorkerStopped) {
					stoppedCause.Add(1)
				}
				return 0, ctx.Err()
			})
			ctx := context.Background()
			if _, err := enqueueMany(ctx, b.client, "stuck", make([]int, 10)); err != nil {
				t.Fatal(err)
			}
			cfg := tasks.WorkerConfig{Concurrency: 10, ShutdownTimeout: 200 * time.Millisecond}
			ab := make(chan struct{})
			if abort {
				cfg.ShutdownTimeout = time.Hour
				cfg.Abort = ab
			}
			stop := serve(t, b, cfg)
			testrig.Eventually(t, 20*time.Second, "10 handlers running", func() bool { return started.Load() == 10 })
			if abort {
				go func() { time.Sleep(100 * time.Millisecond); close(ab) }()
			}
			if err := stop(); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if n := stoppedCause.Load(); n != 10 {
				t.Errorf("%d of 10 handlers saw ErrWorkerStopped as their context's cause", n)
			}
			d, err := b.q.Depth(ctx)
			if err != nil || d.Pending+d.Delayed != 10 || d.Dead != 0 || d.Leased != 0 {
				t.Errorf("after Serve returned, Depth = %+v, %v: want the 10 handed back, none dead (MaxAttempts 1)", d, err)
			}
			logMu.Lock()
			text := logs.String()
			logMu.Unlock()
			if strings.Contains(text, "level=WARN") || strings.Contains(text, "level=ERROR") {
				t.Errorf("a shutdown's hand-back logged above INFO:\n%s", text)
			}
			if !strings.Contains(text, "the worker stopped before the task finished") {
				t.Errorf("no INFO line for the hand-back:\n%s", text)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestServeRefusals(t *testing.T) {
	b := setup(t, nil, queue.Config{})
	ctx := context.Background()
	for name, cfg := range map[string]tasks.WorkerConfig{
		"Concurrency -1":       {Concurrency: -1},
		"Concurrency 1001":     {Concurrency: 1001},
		"ShutdownTimeout -1ns": {ShutdownTimeout: -1},
	} {
		if err := b.mux.Serve(ctx, b.q, cfg); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("%s: Serve = %v, want ErrInvalidArgument", name, err)
		}
	}
	//lint:ignore SA1012 a nil context is what is tried
	if err := b.mux.Serve(nil, b.q, tasks.WorkerConfig{}); !errors.Is(err, tasks.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil context: Serve = %v, want ErrInvalidArgument", err)
	}
	if err := b.mux.Serve(ctx, nil, tasks.WorkerConfig{}); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("nil queue: Serve = %v, want ErrInvalidArgument", err)
	}
	var nilMux *tasks.Mux
	if err := nilMux.Serve(ctx, b.q, tasks.WorkerConfig{}); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("nil Mux: Serve = %v, want ErrInvalidArgument", err)
	}
}

// TestServeInTheTraces: a task that a worker runs has its CONSUMER span,
// as a stolen slice's: named and attributed alike, a root of its own
// (no recruitment runs it), linked to the enqueue's PRODUCER span.
func TestServeInTheTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := setup(t, nil, queue.Config{}, tasks.WithTracerProvider(tp))
	var ran atomic.Int32
	mustHandle(t, b.mux, "traced", func(ctx context.Context, n int) (int, error) {
		ran.Add(1)
		return n, nil
	})
	ctx := context.Background()
	mustEnqueue(t, b.client, "traced", 1) // outside any trace
	reqCtx, request := tp.Tracer("test").Start(ctx, "request")
	id, err := enqueue(reqCtx, b.client, "traced", 2)
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	stop := serve(t, b, tasks.WorkerConfig{})
	testrig.Eventually(t, 10*time.Second, "both tasks ran", func() bool { return ran.Load() == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var producer, consumer sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch {
		case s.SpanKind() == trace.SpanKindProducer && attrOf(s, "messaging.message.id") == id:
			producer = s
		case s.SpanKind() == trace.SpanKindConsumer && attrOf(s, "messaging.message.id") == id:
			consumer = s
		}
	}
	if producer == nil || consumer == nil {
		t.Fatalf("spans of task %s: producer %v, consumer %v; want both", id, producer != nil, consumer != nil)
	}
	wantMessaging(t, consumer, trace.SpanKindConsumer, "process", b.q.Name(), id)
	if consumer.Parent().IsValid() {
		t.Errorf("the worker's CONSUMER span has a parent %v; want a root", consumer.Parent().SpanID())
	}
	if links := consumer.Links(); len(links) == 0 || links[0].SpanContext.SpanID() != producer.SpanContext().SpanID() {
		t.Errorf("the CONSUMER span's links %v; want the enqueue's PRODUCER span first", links)
	}
}
