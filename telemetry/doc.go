// Package telemetry is worksteal's OpenTelemetry layer: the names of its
// span, attributes and metrics, the [Telemetry] that records one
// recruitment at a time, and the [Dashboard] that shows the stolen work.
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
// # Dashboard
//
// [NewDashboard] returns an http.Handler showing what a recruiter (any
// [Source]) stole, meant for an internal or debug mux, like pprof:
//
//	d, err := telemetry.NewDashboard(rec,
//		telemetry.WithTitle("catalog"),
//		telemetry.WithGauge("queue depth", func(ctx context.Context) (float64, error) {
//			st, err := q.Stats(ctx) // a queue.Queue, say
//			return float64(st.Pending), err
//		}),
//		telemetry.WithTraceURL("http://localhost:16686/trace/%s"))
//	mux.Handle("/debug/worksteal", d)
//	defer d.Close()
//
// Its page holds a table of the jobs (rate, Every, budget, draws and their
// outcomes, items stolen, slice p50/p99, last run), an SVG chart of the
// items stolen per second by job and one of each gauge, and the latest
// recruitments with their trace ids. The chart is drawn on the server; the
// page has no external asset and no CDN, and its one inline script (allowed
// by hash in its Content-Security-Policy) refetches it every 2 s and swaps
// its content; without JavaScript it is a static snapshot. Its links are
// relative, so it works at any path, also under http.StripPrefix.
//
// With ?format=json, or Accept: application/json (without text/html), it
// serves a [DashboardDocument] instead: a stable document for scripts, with
// durations in milliseconds and times in RFC 3339.
//
// A sampler goroutine, started by [NewDashboard] and stopped by
// [Dashboard.Close], reads the source every [WithSampleEvery] (1s by
// default) and keeps [WithWindow] (10m) of samples: each job's items per
// second over the real time between samples, and each gauge, read with a
// deadline of the interval (at most 1s); a gauge that fails or is late is
// a gap, never a zero. The dashboard serves only GET and HEAD and sets
// Cache-Control: no-store. It shows job names and error texts, so mount it
// where only operators can reach it.
//
// # Providers
//
// The tracer and meter come from [WithTracerProvider] and
// [WithMeterProvider], the otel globals by default, and are named
// [ScopeName] at [Version].
package telemetry
