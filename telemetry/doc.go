// Package telemetry is worksteal's OpenTelemetry layer: the names of its
// span, attributes and metrics, and the [Telemetry] that records one
// recruitment at a time.
//
// # Spans
//
// Every recruitment (a drawn job that reached Redis) is one span named
// [SpanRecruit]. It is a new root, because stolen work outlives the request
// that offered it, linked to the enlisting request's span so a tracing UI
// can jump from one to the other. Its attributes are [AttrJob], [AttrRate],
// [AttrOutcome] and, for slices that ran, [AttrItems] and [AttrMore]. The
// job's context carries the span, so Redis calls made through an
// instrumented client nest under it.
//
// # Metrics
//
//   - [MetricRecruitments]: counter, by job and outcome.
//   - [MetricSliceDuration]: histogram in seconds, by job and outcome, for slices that ran.
//   - [MetricItems]: counter of items processed, by job.
//
// # Providers
//
// The tracer and meter come from [WithTracerProvider] and
// [WithMeterProvider], the otel globals by default, and are named
// [ScopeName] at [Version].
package telemetry
