package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Option configures [New].
type Option interface{ apply(*config) }

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the provider of the tracer; nil keeps the otel global.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracerProvider = tp
		}
	})
}

// WithMeterProvider sets the provider of the meter; nil keeps the otel global.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.meterProvider = mp
		}
	})
}

// Telemetry records recruitments as spans and metrics. It is safe for
// concurrent use.
type Telemetry struct {
	tracer        trace.Tracer
	recruitments  metric.Int64Counter
	sliceDuration metric.Float64Histogram
	items         metric.Int64Counter
}

// New returns a Telemetry using the given providers, the otel globals by
// default. Errors creating instruments go to [otel.Handle], as otel
// instrumentation libraries do, and that instrument records nothing.
func New(opts ...Option) *Telemetry {
	c := config{
		tracerProvider: otel.GetTracerProvider(),
		meterProvider:  otel.GetMeterProvider(),
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	t := &Telemetry{
		tracer: c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
	}
	meter := c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	var err error
	if t.recruitments, err = meter.Int64Counter(MetricRecruitments,
		metric.WithDescription("Recruitments of this process, by job and outcome."),
		metric.WithUnit("{recruitment}")); err != nil {
		otel.Handle(err)
		t.recruitments = noop.Int64Counter{}
	}
	if t.sliceDuration, err = meter.Float64Histogram(MetricSliceDuration,
		metric.WithDescription("Duration of the slices that ran, by job and outcome."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
		otel.Handle(err)
		t.sliceDuration = noop.Float64Histogram{}
	}
	if t.items, err = meter.Int64Counter(MetricItems,
		metric.WithDescription("Items of stolen work processed, by job."),
		metric.WithUnit("{item}")); err != nil {
		otel.Handle(err)
		t.items = noop.Int64Counter{}
	}
	return t
}

// Start begins the span of one recruitment of job. The span is a new root
// linked to the span found in enlisting (the request that offered its
// time), if any. The returned context carries the new span; pass it to the
// job.
func (t *Telemetry) Start(enlisting context.Context, job string, rate float64) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrJob.String(job), AttrRate.Float64(rate)),
	}
	if sc := trace.SpanContextFromContext(enlisting); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return t.tracer.Start(enlisting, SpanRecruit, opts...)
}

// Result is what [Telemetry.End] records of one recruitment.
type Result struct {
	Outcome  Outcome
	Ran      bool          // the job's Run was called (Duration, Items and More are its)
	Items    int           // Report.Items
	More     bool          // Report.More
	Duration time.Duration // how long Run took
	Err      error         // the cause of an error, timeout or panic outcome
}

// End ends the span of a recruitment of job and records its metrics.
func (t *Telemetry) End(ctx context.Context, span trace.Span, job string, res Result) {
	span.SetAttributes(AttrOutcome.String(string(res.Outcome)))
	if res.Ran {
		span.SetAttributes(AttrItems.Int(res.Items), AttrMore.Bool(res.More))
	}
	switch res.Outcome {
	case OutcomeError, OutcomeTimeout, OutcomePanic:
		msg := string(res.Outcome)
		if res.Err != nil {
			span.RecordError(res.Err)
			msg = res.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()

	byJob := attribute.NewSet(AttrJob.String(job))
	byOutcome := metric.WithAttributeSet(attribute.NewSet(AttrJob.String(job), AttrOutcome.String(string(res.Outcome))))
	t.recruitments.Add(ctx, 1, byOutcome)
	if res.Ran {
		t.sliceDuration.Record(ctx, res.Duration.Seconds(), byOutcome)
	}
	if res.Items > 0 {
		t.items.Add(ctx, int64(res.Items), metric.WithAttributeSet(byJob))
	}
}
