// Package dashboard serves a live page of what a recruiter stole. [New]
// returns an http.Handler showing a recruiter (any [Source]), meant for an
// internal or debug mux, like pprof:
//
//	d, err := dashboard.New(rec,
//		dashboard.WithTitle("catalog"),
//		dashboard.WithGauge("queue depth", func(ctx context.Context) (float64, error) {
//			st, err := q.Stats(ctx) // a queue.Queue, say
//			return float64(st.Pending), err
//		}),
//		dashboard.WithTraceURL("http://localhost:16686/trace/%s"),
//		dashboard.WithTasks(mux)) // a tasks.Mux: its counts by task type
//	mux.Handle("/debug/worksteal", d)
//	defer d.Close()
//
// Its page holds a table of the jobs (rate, Every, budget, draws and their
// outcomes, items stolen, slice p50/p99, last run; automatic pace as
// "auto" with a sparkline of the job's share, a pause as a pill), an SVG
// chart of the items stolen per second by job and one of each gauge, and
// the latest recruitments with their trace ids; with [WithTasks], a table
// of the task types of a tasks.Mux, with their attempts done, retried,
// dead and running in this process. The chart is drawn on the
// server; the page has no external asset and no CDN, and its one inline
// script (allowed by hash in its Content-Security-Policy) refetches it
// every 2 s and swaps its content; without JavaScript it is a static
// snapshot. Its links are relative, so it works at any path, also under
// http.StripPrefix.
//
// With ?format=json, or Accept: application/json (without text/html), it
// serves a [Document] instead: a stable document for scripts, with
// durations in milliseconds and times in RFC 3339.
//
// # Sampling
//
// A sampler goroutine, started by [New] and stopped by
// [Dashboard.Close], reads the source every [WithSampleEvery] (1s by
// default) and keeps [WithWindow] (10m) of samples: each job's items per
// second over the real time between samples and its share of enlistments
// (which automatic pace changes), and each gauge, read with a
// deadline of the interval (at most 1s); a gauge that fails or is late is
// a gap, never a zero. The dashboard serves only GET and HEAD and sets
// Cache-Control: no-store. It shows job names and error texts, so mount it
// where only operators can reach it.
package dashboard
