package recruiter_test

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/telemetry"
)

// TestRecruitmentTelemetry: each recruitment is one span, a root linked to
// the enlisting request's span, carried by the job's context, with the
// outcome and the slice's report; the metrics count the same.
func TestRecruitmentTelemetry(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })

	clock := newManualClock()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "tel", TracerProvider: tp, MeterProvider: mp}, nil, clock.Now))
	var jobSpan trace.SpanContext
	var panicNext bool
	mustRegister(t, b.rec, recruiter.Func("traced", func(ctx context.Context) (recruiter.Report, error) {
		if panicNext {
			panic("traced job broke")
		}
		jobSpan = trace.SpanContextFromContext(ctx)
		return recruiter.Report{Items: 5, More: true}, nil
	}), recruiter.JobConfig{Rate: 1, Budget: 30 * time.Millisecond})

	reqCtx, reqSpan := tp.Tracer("http").Start(context.Background(), "GET /cached")
	b.rec.Enlist(reqCtx)
	reqSpan.End()

	ctx := context.Background()
	b.rdb.Set(ctx, "tel:lock:traced", "another-node", time.Minute)
	b.rec.Enlist(ctx)
	b.rdb.Del(ctx, "tel:lock:traced")
	clock.Advance(2 * time.Minute)
	panicNext = true
	b.rec.Enlist(ctx)

	var recruits []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == telemetry.SpanRecruit {
			recruits = append(recruits, s)
		}
	}
	if len(recruits) != 3 {
		t.Fatalf("%d recruit spans, want 3 (ran, skipped_locked, panic)", len(recruits))
	}
	ran, skipped, panicked := recruits[0], recruits[1], recruits[2]
	if ran.Parent().IsValid() || len(ran.Links()) != 1 || ran.Links()[0].SpanContext.SpanID() != reqSpan.SpanContext().SpanID() {
		t.Fatalf("the recruit span: parent %v, links %+v; want a root linked to the request span", ran.Parent(), ran.Links())
	}
	if jobSpan.SpanID() != ran.SpanContext().SpanID() {
		t.Fatalf("the job's context carried span %v, want the recruit span %v", jobSpan.SpanID(), ran.SpanContext().SpanID())
	}
	wantAttrs := func(s sdktrace.ReadOnlySpan, want ...attribute.KeyValue) {
		t.Helper()
		have := attribute.NewSet(s.Attributes()...)
		for _, kv := range want {
			if v, ok := have.Value(kv.Key); !ok || v != kv.Value {
				t.Errorf("span attribute %s = %v, want %v", kv.Key, v.String(), kv.Value.String())
			}
		}
	}
	wantAttrs(ran, telemetry.AttrJob.String("traced"), telemetry.AttrRate.Float64(1), telemetry.AttrOutcome.String("ran"),
		telemetry.AttrItems.Int(5), telemetry.AttrMore.Bool(true))
	wantAttrs(skipped, telemetry.AttrOutcome.String("skipped_locked"))
	wantAttrs(panicked, telemetry.AttrOutcome.String("panic"))
	if panicked.Status().Code != codes.Error || panicked.Status().Description != "panic: traced job broke" {
		t.Fatalf("the panicked slice's span status = %+v", panicked.Status())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	byOutcome := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.MetricRecruitments {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				o, _ := dp.Attributes.Value(telemetry.AttrOutcome)
				byOutcome[o.AsString()] += dp.Value
			}
		}
	}
	if byOutcome["ran"] != 1 || byOutcome["skipped_locked"] != 1 || byOutcome["panic"] != 1 {
		t.Fatalf("recruitments by outcome = %v, want one each of ran, skipped_locked, panic", byOutcome)
	}
}

// TestJobGaugesTelemetry: each collection reports every job's share of
// enlistments and whether it is paused, by job; after Shutdown the
// recruiter's callback is gone and reports nothing.
func TestJobGaugesTelemetry(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	clock := newManualClock()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "gauges", MeterProvider: mp}, nil, clock.Now))
	noop := func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, nil }
	mustRegister(t, b.rec, recruiter.Func("fixed", noop), recruiter.JobConfig{Rate: 0.25})
	mustRegister(t, b.rec, recruiter.Func("auto", noop), recruiter.JobConfig{Every: time.Minute})
	if err := b.rec.Pause(context.Background(), "auto", time.Minute); err != nil {
		t.Fatal(err)
	}

	collect := func() (rate map[string]float64, paused map[string]int64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		rate, paused = map[string]float64{}, map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch m.Name {
				case telemetry.MetricJobRate:
					for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
						job, _ := dp.Attributes.Value(telemetry.AttrJob)
						rate[job.AsString()] = dp.Value
					}
				case telemetry.MetricJobPaused:
					for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
						job, _ := dp.Attributes.Value(telemetry.AttrJob)
						paused[job.AsString()] = dp.Value
					}
				}
			}
		}
		return rate, paused
	}

	rate, paused := collect()
	if len(rate) != 2 || rate["fixed"] != 0.25 || rate["auto"] != 0.75 {
		t.Errorf("%s = %v, want fixed 0.25 and auto 0.75 (what the fixed rate leaves)", telemetry.MetricJobRate, rate)
	}
	if len(paused) != 2 || paused["fixed"] != 0 || paused["auto"] != 1 {
		t.Errorf("%s = %v, want fixed 0 and auto 1", telemetry.MetricJobPaused, paused)
	}
	clock.Advance(time.Minute + time.Second)
	if _, paused = collect(); paused["auto"] != 0 {
		t.Errorf("%s of auto = %d once its pause has passed, want 0", telemetry.MetricJobPaused, paused["auto"])
	}

	if err := b.rec.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rate, paused = collect(); len(rate)+len(paused) != 0 {
		t.Errorf("after Shutdown the gauges report %v and %v, want nothing", rate, paused)
	}
}

// TestLastSuccessAndNextTickGauges: a job's last successful slice and a
// scheduled job's next tick are gauges in unix seconds, absent until
// known; a failing slice does not move the last success.
func TestLastSuccessAndNextTickGauges(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "lastok", MeterProvider: mp}, fixedRoll(0), nil))
	var fail atomic.Bool
	mustRegister(t, b.rec, recruiter.Func("fixed", func(context.Context) (recruiter.Report, error) {
		if fail.Load() {
			return recruiter.Report{}, errors.New("upstream down")
		}
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 0.5})
	mustRegister(t, b.rec, recruiter.Func("nightly", noop), recruiter.JobConfig{Schedule: "0 3 * * *"})

	collect := func() (lastOK, next map[string]float64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		lastOK, next = map[string]float64{}, map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				into := map[string]map[string]float64{telemetry.MetricJobLastSuccess: lastOK, telemetry.MetricJobNextTick: next}[m.Name]
				if into == nil {
					continue
				}
				for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
					job, _ := dp.Attributes.Value(telemetry.AttrJob)
					into[job.AsString()] = dp.Value
				}
			}
		}
		return lastOK, next
	}
	lastOK, next := collect()
	if len(lastOK) != 0 {
		t.Errorf("%s = %v before any slice, want none", telemetry.MetricJobLastSuccess, lastOK)
	}
	now := float64(time.Now().UnixMilli()) / 1e3
	if n := next["nightly"]; n < now || n > now+24*3600+1 || len(next) != 1 {
		t.Errorf("%s = %v, want nightly's next 03:00 within a day (now %v)", telemetry.MetricJobNextTick, next, now)
	}
	b.rec.Enlist(context.Background())
	lastOK, _ = collect()
	first := lastOK["fixed"]
	if first < now-60 || first > now+60 {
		t.Fatalf("%s of fixed = %v after a slice, want about %v", telemetry.MetricJobLastSuccess, lastOK, now)
	}
	fail.Store(true)
	time.Sleep(100 * time.Millisecond) // the rest of one budget after a slice without Every: a span, not a wait for an event
	b.rec.Enlist(context.Background())
	if js := jobStats(t, b.rec, "fixed"); js.Errors == 0 {
		t.Fatalf("stats %+v: want the failing slice to have run", js)
	}
	if lastOK, _ = collect(); lastOK["fixed"] != first {
		t.Errorf("%s moved to %v on a failed slice, want %v", telemetry.MetricJobLastSuccess, lastOK["fixed"], first)
	}
}

// gaugeValues collects reader once and returns each metric's values by
// job ("" for a metric without one), whatever its number type: gauges
// and the observable counter alike.
func gaugeValues(t *testing.T, reader sdkmetric.Reader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	add := func(name string, attrs attribute.Set, v float64) {
		if got[name] == nil {
			got[name] = map[string]float64{}
		}
		job, _ := attrs.Value(telemetry.AttrJob)
		got[name][job.AsString()] = v
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, dp.Value)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, float64(dp.Value))
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, float64(dp.Value))
				}
			}
		}
	}
	return got
}

// TestPaceAndPressureGauges: a job's interval (its Every, absent without
// one), when this process registered it, the fleet it learnt (absent
// until learnt) and the slices pressure held back, by job; each the value
// that Stats shows.
func TestPaceAndPressureGauges(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	clock, pressure := newManualClock(), &fakePressure{}
	var drawAuto atomic.Bool // roll past chore's half, to auto's
	roll := func() float64 {
		if drawAuto.Load() {
			return 0.6 // chore 0.5, auto 0.25, nightly 0.25
		}
		return 0
	}
	b := setup(t, recruiter.WithPressureRead(recruiter.Hooked(recruiter.Config{
		Inline: true, MeterProvider: mp, Pressure: recruiter.PressureDefault,
	}, roll, clock.Now), pressure.read))
	registered := float64(clock.Now().UnixNano()) / 1e9
	mustRegister(t, b.rec, recruiter.Func("chore", noop), recruiter.JobConfig{Rate: 0.5})
	mustRegister(t, b.rec, recruiter.Func("auto", noop), recruiter.JobConfig{Every: time.Minute})
	mustRegister(t, b.rec, recruiter.Func("nightly", noop), recruiter.JobConfig{Schedule: "0 3 * * *"})

	got := gaugeValues(t, reader)
	if iv := got[telemetry.MetricJobInterval]; len(iv) != 1 || iv["auto"] != 60 {
		t.Errorf("%s = %v, want auto's 60 (s) alone: chore has a Rate, nightly a Schedule", telemetry.MetricJobInterval, iv)
	}
	if reg := got[telemetry.MetricJobRegistered]; len(reg) != 3 || reg["chore"] != registered || reg["auto"] != registered || reg["nightly"] != registered {
		t.Errorf("%s = %v, want %v (the clock at registration) for each of the 3 jobs", telemetry.MetricJobRegistered, reg, registered)
	}
	if pr := got[telemetry.MetricPressured]; len(pr) != 3 || pr["chore"] != 0 {
		t.Errorf("%s = %v, want 0 for each of the 3 jobs", telemetry.MetricPressured, pr)
	}
	if fl := got[telemetry.MetricJobFleet]; len(fl) != 0 {
		t.Errorf("%s = %v before any visit, want none", telemetry.MetricJobFleet, fl)
	}

	pressure.set(5 * time.Millisecond) // above the 1ms default
	for range 3 {
		b.rec.Enlist(context.Background())
		clock.Advance(30 * time.Millisecond)
	}
	if pr := gaugeValues(t, reader)[telemetry.MetricPressured]; pr["chore"] != 3 {
		t.Errorf("%s of chore = %v after 3 draws under pressure, want 3", telemetry.MetricPressured, pr["chore"])
	}

	pressure.set(0)
	drawAuto.Store(true)
	clock.Advance(time.Second)
	b.rec.Enlist(context.Background()) // auto's first visit: the acquire's reply counts the fleet
	st := b.rec.Stats()
	fleet := map[string]float64{}
	for _, js := range st.Jobs {
		if js.Fleet > 0 {
			fleet[js.Name] = js.Fleet
		}
	}
	if fl := gaugeValues(t, reader)[telemetry.MetricJobFleet]; !maps.Equal(fl, fleet) {
		t.Errorf("%s = %v, want what Stats shows, %v", telemetry.MetricJobFleet, fl, fleet)
	}
	if fleet["auto"] == 0 {
		t.Errorf("stats %+v: auto learnt no fleet from its visit", st.Jobs)
	}
}

// TestBreakerGauge: 0 while the breaker is closed, 1 once Redis failed
// and it opened, without a job attribute.
func TestBreakerGauge(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	b := setup(t, recruiter.Hooked(recruiter.Config{BreakerThreshold: 1, Inline: true, MeterProvider: mp, RedisTimeout: time.Second}, fixedRoll(0), nil))
	mustRegister(t, b.rec, recruiter.Func("chore", noop), recruiter.JobConfig{Rate: 1})
	if open := gaugeValues(t, reader)[telemetry.MetricBreakerOpen]; len(open) != 1 || open[""] != 0 {
		t.Errorf("%s = %v with Redis up, want 0 and no job", telemetry.MetricBreakerOpen, open)
	}
	b.srv.Kill()
	b.rec.Enlist(context.Background())
	if !b.rec.Stats().BreakerOpen {
		t.Fatal("a failed lock call at threshold 1 left the breaker closed")
	}
	if open := gaugeValues(t, reader)[telemetry.MetricBreakerOpen]; open[""] != 1 {
		t.Errorf("%s = %v with the breaker open, want 1", telemetry.MetricBreakerOpen, open)
	}
}
