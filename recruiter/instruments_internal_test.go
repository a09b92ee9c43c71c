package recruiter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/telemetry"
)

func setupInstruments(t *testing.T) (*instruments, *tracetest.SpanRecorder, *sdkmetric.ManualReader, *sdktrace.TracerProvider) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return newInstruments(tp, mp), spans, reader, tp
}

func TestRecruitSpanIsALinkedRoot(t *testing.T) {
	t.Parallel()
	tel, spans, _, tp := setupInstruments(t)
	reqCtx, reqSpan := tp.Tracer("test").Start(context.Background(), "GET /items")
	jobCtx, span := tel.start(reqCtx, "tidy", 0.25)
	tel.end(jobCtx, span, "tidy", result{Outcome: OutcomeRan, Ran: true, Items: 7, More: true, Duration: 3 * time.Millisecond})
	reqSpan.End()

	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	rec := ended[0]
	if rec.Name() != telemetry.SpanRecruit {
		t.Fatalf("span name %q, want %q", rec.Name(), telemetry.SpanRecruit)
	}
	if rec.Parent().IsValid() {
		t.Fatalf("the recruit span has parent %v; want a new root", rec.Parent())
	}
	if rec.SpanContext().TraceID() == reqSpan.SpanContext().TraceID() {
		t.Fatal("the recruit span shares the request's trace; want its own")
	}
	if links := rec.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != reqSpan.SpanContext().SpanID() {
		t.Fatalf("links = %+v, want one to the request span %v", links, reqSpan.SpanContext().SpanID())
	}
	if got := oteltrace.SpanContextFromContext(jobCtx).SpanID().String(); got != rec.SpanContext().SpanID().String() {
		t.Fatalf("the job's context carries span %s, want the recruit span %s", got, rec.SpanContext().SpanID())
	}
	want := map[attribute.Key]attribute.Value{
		telemetry.AttrJob:     attribute.StringValue("tidy"),
		telemetry.AttrRate:    attribute.Float64Value(0.25),
		telemetry.AttrOutcome: attribute.StringValue("ran"),
		telemetry.AttrItems:   attribute.IntValue(7),
		telemetry.AttrMore:    attribute.BoolValue(true),
	}
	assertAttrs(t, rec.Attributes(), want)
	if rec.Status().Code != codes.Unset {
		t.Fatalf("status of a clean slice = %v, want unset", rec.Status())
	}
}

func TestFailedOutcomesSetErrorStatus(t *testing.T) {
	t.Parallel()
	tel, spans, _, _ := setupInstruments(t)
	for _, o := range []Outcome{OutcomeError, OutcomeTimeout, OutcomePanic} {
		ctx, span := tel.start(context.Background(), "j", 1)
		tel.end(ctx, span, "j", result{Outcome: o, Ran: true, Err: errors.New("cause of " + string(o))})
	}
	ctx, span := tel.start(context.Background(), "j", 1)
	tel.end(ctx, span, "j", result{Outcome: OutcomeSkippedLocked})

	ended := spans.Ended()
	for i, o := range []string{"error", "timeout", "panic"} {
		s := ended[i]
		if s.Status().Code != codes.Error || s.Status().Description != "cause of "+o {
			t.Errorf("%s: status %+v, want Error with its cause", o, s.Status())
		}
		if len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
			t.Errorf("%s: events %+v, want the recorded error", o, s.Events())
		}
		if len(s.Links()) != 0 {
			t.Errorf("%s: links %+v without an enlisting span, want none", o, s.Links())
		}
	}
	skipped := ended[3]
	if skipped.Status().Code != codes.Unset {
		t.Errorf("a skip has status %+v, want unset", skipped.Status())
	}
	for _, kv := range skipped.Attributes() {
		if kv.Key == telemetry.AttrItems || kv.Key == telemetry.AttrMore {
			t.Errorf("a skipped recruitment carries %s; only slices that ran do", kv.Key)
		}
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	tel, _, reader, _ := setupInstruments(t)
	record := func(job string, res result) {
		ctx, span := tel.start(context.Background(), job, 0.5)
		tel.end(ctx, span, job, res)
	}
	record("drain", result{Outcome: OutcomeRan, Ran: true, Items: 40, Duration: 10 * time.Millisecond})
	record("drain", result{Outcome: OutcomeRan, Ran: true, Items: 2, Duration: 30 * time.Millisecond})
	record("drain", result{Outcome: OutcomeSkippedLocked})
	record("tidy", result{Outcome: OutcomeTimeout, Ran: true, Duration: 60 * time.Millisecond})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.Name != telemetry.ScopeName || rm.ScopeMetrics[0].Scope.Version != telemetry.Version {
		t.Fatalf("scopes = %+v, want one named %s at %s", rm.ScopeMetrics, telemetry.ScopeName, telemetry.Version)
	}
	got := map[string]metricdata.Metrics{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		got[m.Name] = m
	}
	jobOutcome := func(job, outcome string) attribute.Set {
		return attribute.NewSet(telemetry.AttrJob.String(job), telemetry.AttrOutcome.String(outcome))
	}
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        telemetry.MetricRecruitments,
		Description: "Recruitments of this process, by job and outcome.",
		Unit:        "{recruitment}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				{Attributes: jobOutcome("drain", "ran"), Value: 2},
				{Attributes: jobOutcome("drain", "skipped_locked"), Value: 1},
				{Attributes: jobOutcome("tidy", "timeout"), Value: 1},
			},
		},
	}, got[telemetry.MetricRecruitments], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        telemetry.MetricItems,
		Description: "Items of stolen work processed, by job.",
		Unit:        "{item}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				{Attributes: attribute.NewSet(telemetry.AttrJob.String("drain")), Value: 42},
			},
		},
	}, got[telemetry.MetricItems], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())

	hist, ok := got[telemetry.MetricSliceDuration].Data.(metricdata.Histogram[float64])
	if !ok || got[telemetry.MetricSliceDuration].Unit != "s" {
		t.Fatalf("%s = %+v, want a histogram in seconds", telemetry.MetricSliceDuration, got[telemetry.MetricSliceDuration])
	}
	counts := map[string]uint64{}
	sums := map[string]float64{}
	for _, dp := range hist.DataPoints {
		o, _ := dp.Attributes.Value(telemetry.AttrOutcome)
		counts[o.AsString()] += dp.Count
		sums[o.AsString()] += dp.Sum
	}
	if counts["ran"] != 2 || counts["timeout"] != 1 || counts["skipped_locked"] != 0 {
		t.Fatalf("slice duration counts = %v, want 2 ran, 1 timeout, no skips", counts)
	}
	if d := sums["ran"] - 0.040; d < -1e-9 || d > 1e-9 {
		t.Fatalf("ran slices total %vs, want 0.040s", sums["ran"])
	}
}

func assertAttrs(t *testing.T, got []attribute.KeyValue, want map[attribute.Key]attribute.Value) {
	t.Helper()
	have := map[attribute.Key]attribute.Value{}
	for _, kv := range got {
		have[kv.Key] = kv.Value
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("attribute %s = %v, want %v", k, have[k].String(), v.String())
		}
	}
}

func TestRecentErrorTextIsCut(t *testing.T) {
	t.Parallel()
	tel, spans, _, _ := setupInstruments(t)
	// 3-byte runes: 512 bytes fall inside one, so a byte cut would split it.
	payload := "queue: bad payload " + strings.Repeat("€", 2000)
	for _, msg := range []string{payload, "short", strings.Repeat("x", 512)} {
		ctx, span := tel.start(context.Background(), "j", 1)
		tel.end(ctx, span, "j", result{Outcome: OutcomeError, Ran: true, Err: errors.New(msg)})
	}
	recent := tel.recent.list() // newest first
	long := recent[2].Error
	if len(long) > 512 || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") ||
		!strings.HasPrefix(payload, strings.TrimSuffix(long, "…")) || len(long) < 512-3-3 {
		t.Errorf("the long error is kept as %d bytes %q; want its start, cut on a rune boundary to at most 512 bytes with …", len(long), long)
	}
	if recent[1].Error != "short" || recent[0].Error != strings.Repeat("x", 512) {
		t.Errorf("errors of up to 512 bytes were changed: %q, %d bytes", recent[1].Error, len(recent[0].Error))
	}
	if got := spans.Ended()[0].Status().Description; got != payload {
		t.Errorf("the span's status holds %d bytes, want the whole error (%d)", len(got), len(payload))
	}
}
