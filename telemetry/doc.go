// Package telemetry holds the OpenTelemetry names that worksteal records
// under, for queries and dashboards: its scope, its span, the span's and
// metrics' attributes, the metrics and the outcomes of a recruitment. The
// recruiter and a tasks Mux record them; the page that shows a recruiter
// live is [github.com/worksteal/worksteal/dashboard]. This package is a
// leaf: it imports nothing of worksteal's, so every package may use it.
//
// # Spans
//
// Every recruitment (a drawn job that reached Redis) is one span named
// [SpanRecruit]. It is a new root, because stolen work outlives the request
// that offered it, linked to the enlisting request's span so a tracing UI
// can jump from one to the other. Its attributes are [AttrJob], [AttrRate],
// [AttrOutcome] (one of the Outcome names) and, for slices that ran,
// [AttrItems] and [AttrMore]. The job's context carries the span, so Redis
// calls made through an instrumented client nest under it.
//
// # Metrics
//
//   - [MetricRecruitments]: counter, by job and outcome.
//   - [MetricSliceDuration]: histogram in seconds, by job and outcome, for slices that ran.
//   - [MetricItems]: counter of items processed, by job.
//   - [MetricPressured]: counter of slices the pressure gate held back, by job.
//   - Gauges by job, read from the recruiter's own counters at each
//     collection: [MetricJobRate], [MetricJobPaused], [MetricJobInterval],
//     [MetricJobRegistered], [MetricJobFleet], [MetricJobLastSuccess],
//     [MetricJobNextTick]; and [MetricBreakerOpen], [MetricRedisEvictionRisk].
//   - [MetricQueueDepth] by [AttrQueue] and [AttrQueueState] (the Queue
//     states), and [MetricQueueOldestPending]: what a depth job (package
//     jobs, QueueDepth) last read, reported for a while by the process
//     that read it; aggregate them with max, never sum.
//   - [MetricTaskAttempts]: counter of task attempts, by [AttrTaskType] and
//     [AttrTaskOutcome] (TaskDone, TaskRetried, TaskDead); recorded by a
//     tasks Mux, whose meter provider is its WithMeterProvider option.
//   - [MetricTaskRunning]: up-down counter of task attempts running, by [AttrTaskType].
//
// # Providers
//
// The tracer and meter come from the recruiter's Config (TracerProvider,
// MeterProvider), the otel globals by default, and are named [ScopeName]
// at [Version].
package telemetry
