package tasks

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/worksteal/worksteal/internal/qstore"
)

// Tracing off costs no allocation: with the otel global while no
// provider is set (no test of this package sets one), and with a no-op
// provider, a run starts no span. Not parallel: AllocsPerRun counts the
// whole process's allocations.
func TestTracingOffCostsNothing(t *testing.T) {
	if !defaultDelegating {
		t.Fatalf("the otel global's default provider is a %T: tracing off is not recognised", defaultProvider)
	}
	it := qstore.Item{ID: "id", Attempt: 1, Trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	run := func(ctx context.Context, _ *qstore.Store, _ qstore.Item) ([]byte, *qstore.FollowUp, error) {
		if trace.SpanFromContext(ctx).SpanContext().IsValid() {
			t.Error("a span started with tracing off")
		}
		return nil, nil, nil
	}
	for _, tp := range []trace.TracerProvider{nil, noop.NewTracerProvider()} {
		m := NewMux(WithTracerProvider(tp))
		if m.tracing.on() != nil {
			t.Fatalf("provider %T: tracing on", tp)
		}
		if n := testing.AllocsPerRun(100, func() { _, _, _ = m.traced(context.Background(), nil, it, run) }); n != 0 {
			t.Fatalf("provider %T: %v allocations per run, want 0", tp, n)
		}
	}
}

// A trace context goes through its stored form and back; anything else
// reads as none.
func TestTraceContextEncoding(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	s := encodeTrace(sc)
	if s != "00-01020300000000000000000000000000-0405000000000000-01" {
		t.Fatalf("encodeTrace = %q", s)
	}
	if got := decodeTrace(s); !got.Equal(sc) {
		t.Fatalf("decodeTrace(%q) = %v, want %v", s, got, sc)
	}
	if encodeTrace(trace.SpanContext{}) != "" {
		t.Fatal("an invalid span context was encoded")
	}
	for _, bad := range []string{"", "01-01020300000000000000000000000000-0405000000000000-01", s[:54], s + "0",
		"00-00000000000000000000000000000000-0405000000000000-01", "00-01020300000000000000000000000000-0405000000000000-zz"} {
		if decodeTrace(bad).IsValid() {
			t.Errorf("decodeTrace(%q) is valid", bad)
		}
	}
}
