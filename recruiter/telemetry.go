package recruiter

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/internal/ring"
	"github.com/worksteal/worksteal/internal/text"
	"github.com/worksteal/worksteal/telemetry"
)

// instruments record recruitments as spans and metrics, and keep the
// latest for Stats. They are safe for concurrent use.
type instruments struct {
	tracer        trace.Tracer
	recruitments  metric.Int64Counter
	sliceDuration metric.Float64Histogram
	items         metric.Int64Counter
	recent        recentRing

	// The per-job gauges, read by a callback that observe registers;
	// nil if the meter could not make them.
	meter     metric.Meter
	jobRate   metric.Float64ObservableGauge
	jobPaused metric.Int64ObservableGauge
	evictRisk metric.Int64ObservableGauge
	lastOK    metric.Float64ObservableGauge
	nextTick  metric.Float64ObservableGauge
	interval  metric.Float64ObservableGauge
	since     metric.Float64ObservableGauge // registered
	fleet     metric.Float64ObservableGauge
	pressured metric.Int64ObservableCounter
	breaker   metric.Int64ObservableGauge
	observing metric.Registration // nil until observe, and after unobserve
}

// newInstruments makes the tracer and meter of tp and mp, the otel
// globals when nil. Errors creating instruments go to [otel.Handle], as
// otel instrumentation libraries do, and that instrument records nothing.
func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) *instruments {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &instruments{
		tracer: tp.Tracer(telemetry.ScopeName, trace.WithInstrumentationVersion(telemetry.Version)),
		recent: recentRing{last: ring.New[Recruitment](recentSize)},
	}
	meter := mp.Meter(telemetry.ScopeName, metric.WithInstrumentationVersion(telemetry.Version))
	var err error
	if t.recruitments, err = meter.Int64Counter(telemetry.MetricRecruitments,
		metric.WithDescription("Recruitments of this process, by job and outcome."),
		metric.WithUnit("{recruitment}")); err != nil {
		otel.Handle(err)
		t.recruitments = noop.Int64Counter{}
	}
	if t.sliceDuration, err = meter.Float64Histogram(telemetry.MetricSliceDuration,
		metric.WithDescription("Duration of the slices that ran, by job and outcome."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)); err != nil {
		otel.Handle(err)
		t.sliceDuration = noop.Float64Histogram{}
	}
	if t.items, err = meter.Int64Counter(telemetry.MetricItems,
		metric.WithDescription("Items of stolen work processed, by job."),
		metric.WithUnit("{item}")); err != nil {
		otel.Handle(err)
		t.items = noop.Int64Counter{}
	}
	t.meter = meter
	if t.jobRate, err = meter.Float64ObservableGauge(telemetry.MetricJobRate,
		metric.WithDescription("Each job's share of enlistments now: its Rate, or what automatic pace set."),
		metric.WithUnit("1")); err != nil {
		otel.Handle(err)
		t.jobRate = nil
	}
	if t.jobPaused, err = meter.Int64ObservableGauge(telemetry.MetricJobPaused,
		metric.WithDescription("1 while the job is paused fleet-wide, as this process last learnt, else 0."),
		metric.WithUnit("1")); err != nil {
		otel.Handle(err)
		t.jobPaused = nil
	}
	if t.lastOK, err = meter.Float64ObservableGauge(telemetry.MetricJobLastSuccess,
		metric.WithDescription("When the job's last slice that ran without error ended in this process, unix seconds."),
		metric.WithUnit("s")); err != nil {
		otel.Handle(err)
		t.lastOK = nil
	}
	if t.nextTick, err = meter.Float64ObservableGauge(telemetry.MetricJobNextTick,
		metric.WithDescription("A scheduled job's next tick, as this process plans to visit it, unix seconds."),
		metric.WithUnit("s")); err != nil {
		otel.Handle(err)
		t.nextTick = nil
	}
	if t.interval, err = meter.Float64ObservableGauge(telemetry.MetricJobInterval,
		metric.WithDescription("The job's Every: how often it should run, fleet-wide."),
		metric.WithUnit("s")); err != nil {
		otel.Handle(err)
		t.interval = nil
	}
	if t.since, err = meter.Float64ObservableGauge(telemetry.MetricJobRegistered,
		metric.WithDescription("When this process registered the job, unix seconds."),
		metric.WithUnit("s")); err != nil {
		otel.Handle(err)
		t.since = nil
	}
	if t.fleet, err = meter.Float64ObservableGauge(telemetry.MetricJobFleet,
		metric.WithDescription("The processes visiting the job, as this process last learnt it (automatic pace and schedules)."),
		metric.WithUnit("{process}")); err != nil {
		otel.Handle(err)
		t.fleet = nil
	}
	if t.pressured, err = meter.Int64ObservableCounter(telemetry.MetricPressured,
		metric.WithDescription("Slices the pressure gate held back because this process was busy, by job."),
		metric.WithUnit("{slice}")); err != nil {
		otel.Handle(err)
		t.pressured = nil
	}
	if t.breaker, err = meter.Int64ObservableGauge(telemetry.MetricBreakerOpen,
		metric.WithDescription("1 while this process's circuit breaker keeps recruitment away from Redis, else 0.")); err != nil {
		otel.Handle(err)
		t.breaker = nil
	}
	if t.evictRisk, err = meter.Int64ObservableGauge(telemetry.MetricRedisEvictionRisk,
		metric.WithDescription("1 when the Redis server's maxmemory-policy may evict worksteal's keys, else 0."),
		metric.WithUnit("1")); err != nil {
		otel.Handle(err)
		t.evictRisk = nil
	}
	return t
}

// observe registers the callback that reports r's jobs on the gauges at
// each collection. It reads the same atomics as Stats, so it costs the
// hot path nothing; [instruments.unobserve] ends it.
func (t *instruments) observe(r *Recruiter) {
	if t.jobRate == nil || t.jobPaused == nil || t.evictRisk == nil || t.lastOK == nil || t.nextTick == nil ||
		t.interval == nil || t.since == nil || t.fleet == nil || t.pressured == nil || t.breaker == nil {
		return // already reported to otel.Handle
	}
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := r.now().UnixNano() // the clock pausedUntil was set with
		for _, e := range r.jobs.Load().entries {
			job := metric.WithAttributeSet(attribute.NewSet(telemetry.AttrJob.String(e.name)))
			o.ObserveFloat64(t.jobRate, e.share.Load(), job)
			var paused int64
			if now < e.pausedUntil.Load() {
				paused = 1
			}
			o.ObserveInt64(t.jobPaused, paused, job)
			if ns := e.stats.lastOK.Load(); ns != 0 {
				o.ObserveFloat64(t.lastOK, float64(ns)/1e9, job)
			}
			if tk, ok := e.mode.(*ticks); ok && tk.want.Load() != 0 {
				o.ObserveFloat64(t.nextTick, float64(tk.want.Load())/1e3, job)
			}
			if e.cfg.Every > 0 {
				o.ObserveFloat64(t.interval, e.cfg.Every.Seconds(), job)
			}
			o.ObserveFloat64(t.since, float64(e.stats.registered)/1e9, job)
			if fleet := e.fleet(); fleet > 0 {
				o.ObserveFloat64(t.fleet, fleet, job)
			}
			o.ObserveInt64(t.pressured, int64(e.stats.pressured.Load()), job)
		}
		var open int64
		if r.breaker.isOpen() {
			open = 1
		}
		o.ObserveInt64(t.breaker, open)
		if ev := r.evictionState(); ev.policy != "" {
			var risk int64
			if ev.risk != "" {
				risk = 1
			}
			o.ObserveInt64(t.evictRisk, risk, metric.WithAttributeSet(attribute.NewSet(telemetry.AttrEvictionPolicy.String(ev.policy))))
		}
		return nil
	}, t.jobRate, t.jobPaused, t.evictRisk, t.lastOK, t.nextTick, t.interval, t.since, t.fleet, t.pressured, t.breaker)
	if err != nil {
		otel.Handle(err)
		return
	}
	t.observing = reg
}

// unobserve unregisters the gauges' callback, so that the meter provider,
// which may outlive the recruiter, neither keeps it alive nor reports its
// jobs after Shutdown. Shutdown calls it once.
func (t *instruments) unobserve() {
	if t.observing == nil {
		return
	}
	if err := t.observing.Unregister(); err != nil {
		otel.Handle(err)
	}
	t.observing = nil
}

// start begins the span of one recruitment of job. The span is a new root
// linked to the span found in enlisting (the request that offered its
// time), if any. The returned context carries the new span; pass it to the
// job.
func (t *instruments) start(enlisting context.Context, job string, rate float64) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(telemetry.AttrJob.String(job), telemetry.AttrRate.Float64(rate)),
	}
	if sc := trace.SpanContextFromContext(enlisting); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return t.tracer.Start(enlisting, telemetry.SpanRecruit, opts...)
}

// result is what [instruments.end] records of one recruitment.
type result struct {
	Outcome  Outcome
	Ran      bool          // the job's Run was called (Duration, Items and More are its)
	Items    int           // Report.Items
	More     bool          // Report.More
	Duration time.Duration // how long Run took
	Err      error         // the cause of an error, timeout, panic or hung outcome
}

// end ends the span of a recruitment of job and records its metrics. The
// recruitment joins the recent ones with the text of res.Err cut to
// 512 bytes; the span keeps it whole.
func (t *instruments) end(ctx context.Context, span trace.Span, job string, res result) {
	span.SetAttributes(telemetry.AttrOutcome.String(string(res.Outcome)))
	if res.Ran {
		span.SetAttributes(telemetry.AttrItems.Int(res.Items), telemetry.AttrMore.Bool(res.More))
	}
	switch res.Outcome {
	case OutcomeError, OutcomeTimeout, OutcomePanic, OutcomeHung:
		msg := string(res.Outcome)
		if res.Err != nil {
			span.RecordError(res.Err)
			msg = res.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
	t.recent.add(Recruitment{
		End: time.Now(), Job: job, Outcome: res.Outcome, Items: res.Items, More: res.More,
		Duration: res.Duration, TraceID: traceID(span), Error: errorText(res.Err),
	})

	byJob := attribute.NewSet(telemetry.AttrJob.String(job))
	byOutcome := metric.WithAttributeSet(attribute.NewSet(telemetry.AttrJob.String(job), telemetry.AttrOutcome.String(string(res.Outcome))))
	t.recruitments.Add(ctx, 1, byOutcome)
	if res.Ran {
		t.sliceDuration.Record(ctx, res.Duration.Seconds(), byOutcome)
	}
	if res.Items > 0 {
		t.items.Add(ctx, int64(res.Items), metric.WithAttributeSet(byJob))
	}
}

// recentSize is how many recruitments Stats keeps.
const recentSize = 50

// recentRing keeps the latest recruitments for the status page;
// recruitments are rare next to requests, so a mutex is fine here.
type recentRing struct {
	mu   sync.Mutex
	last *ring.Ring[Recruitment]
}

func (r *recentRing) add(rec Recruitment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last.Add(rec)
}

// list returns the recruitments kept, newest first.
func (r *recentRing) list() []Recruitment {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last.NewestFirst()
}

func traceID(span trace.Span) string {
	if sc := span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// errorTextMax bounds the bytes of a Recruitment's Error: an error that
// wraps a payload must not bloat the dashboard.
const errorTextMax = 512

// errorText is err's text, cut on a rune boundary to at most errorTextMax
// bytes, an ellipsis included, if it is longer.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return text.Truncate(err.Error(), errorTextMax, "…")
}
