// Package dashboard serves a live page of what a recruiter stole. [New]
// returns an http.Handler showing a recruiter (any [Source]), meant for an
// internal or debug mux, like pprof:
//
//	d, err := dashboard.New(rec,
//		dashboard.WithTitle("catalog"),
//		dashboard.WithGauge("queue depth", func(ctx context.Context) (float64, error) {
//			st, err := q.Depth(ctx) // a queue.Queue, say
//			return float64(st.Pending), err
//		}),
//		dashboard.WithTraceURL("http://localhost:16686/trace/%s"),
//		dashboard.WithTasks(mux), // a tasks.Mux: its counts by task type
//		dashboard.WithQueues(q))  // a queue.Queue: its depth by state, oldest wait, dead letters
//	mux.Handle("/debug/worksteal", d)
//	defer d.Close()
//
// Its page opens on health: a table of the jobs (each one's state, last
// run, next due, pace or schedule, slices ran and failed, items stolen,
// slice p50/p99; a pause as a pill), with the pacer's internals behind a
// details view; with [WithQueues], each queue's depth by state, its
// oldest wait and its dead letters; with [WithTasks], a table of the task
// types of a tasks.Mux, with their attempts done, retried, dead and
// running in this process; then an SVG chart of the items stolen per
// second by job and one of each gauge, and the latest recruitments with
// their trace ids. The jobs table fits a 1280 px screen without a
// horizontal scrollbar. The chart is drawn on the
// server; the page has no external asset and no CDN, and its one inline
// script (allowed by hash in its Content-Security-Policy) refetches it
// every 2 s and swaps its content; without JavaScript it is a static
// snapshot. Its links are relative, so it works at any path, also under
// http.StripPrefix.
//
// With ?format=json, or Accept: application/json (without text/html), it
// serves a [Document] instead: a stable document for scripts, with
// durations in milliseconds and times in RFC 3339. [Dashboard.Document]
// returns the same value to Go code.
//
// # Reading the jobs table
//
// Each job's state comes first ([DocumentJob].State says it for scripts),
// the first that applies of:
//
//   - paused: an operator paused it, fleet-wide;
//   - failing: its newest run here failed (an error, of the slice or of
//     Redis granting its lock, a timeout, a panic or a hung slice);
//   - late: no run seen for 3 × Every, here or in the fleet (Redis
//     answering that the job is locked or cooling down counts as a run
//     seen; of an automatic job, 3 × Every × the fleet's size this
//     process learnt, since each process sees about one run in that many),
//     or, of a schedule, a tick not started here 1 s after it, or
//     a last run here that began over 1 s after its tick;
//   - held back: this process, busy, held it back in the last 10 s
//     ([recruiter.Config].Pressure); the job is drawn again later;
//   - on time: none of these. A job without Every or a schedule runs
//     when requests exit fast and is never late.
//
// Beside the state, a sentence says why. Next due is a schedule's next
// tick here ("tick due" once it passed unvisited), the last run seen plus
// Every, or "on traffic". A scheduled job shows its cron expression where
// a pace stands; an automatic job its pace, about one run per Every
// fleet-wide, and the fleet's size as this process learnt it, with its
// share of enlistments as a sparkline; a fixed Rate its share.
//
// The pacer's internals sit behind "Pacer internals", each explained in a
// sentence there:
//
//   - Attempts: every try of this process to run a slice: draws by
//     requests' rolls, starts by its pace timer when no request came in
//     time, and wakes by an enqueue here.
//   - Held back by the fleet: Redis answered that the fleet holds the job
//     (another process held its lock, it ran within its Every, or it is
//     paused). A job with Every runs about once per Every across the
//     whole fleet, so most attempts end here: that is the pace, not a
//     fault.
//   - Held back here: this process did not ask Redis, most often because
//     it already knew the job was held, else a slice of it was running
//     here, no slot was free, the breaker was open, or the process was
//     busy ("n busy"). It counts attempts, the timer's and the wakes'
//     included, so it may exceed the draws, never the attempts.
//   - Slices, and the failures by kind: errors, timeouts, panics, hung.
//
// When the Redis server's maxmemory-policy may evict worksteal's keys
// ([recruiter.Stats].EvictionRisk), a banner at the top of the page says
// so and what to set. The policy itself is named discreetly under the
// title once the recruiter has read it.
//
// The [Document] carries the same facts: state, state_reason, next_due,
// attempts, woken, skipped.elsewhere and skipped.pressured, timed, fleet,
// schedule, next_tick, tick_overdue (a tick passed over 5 s ago
// unvisited), late_ms, queues, eviction_policy and eviction_risk.
//
// # Sampling
//
// A sampler goroutine, started by [New] and stopped by
// [Dashboard.Close], reads the source every [WithSampleEvery] (1s by
// default) and keeps [WithWindow] (10m) of samples: each job's items per
// second over the real time between samples and its share of enlistments
// (which automatic pace changes), and each gauge, read with a
// deadline of the interval (at most 1s); a gauge that fails or is late is
// a gap, never a zero. Without [WithActions] the dashboard serves only
// GET and HEAD and sets Cache-Control: no-store. It shows job names and
// error texts, so mount it where only operators can reach it.
//
// # Actions
//
// The page is read-only unless [WithActions] is given. With it, the page
// lists the fleet's jobs and queues (from package inspect, as the CLI
// does) under its live part, and operators can:
//
//   - pause a job fleet-wide for a duration, resume it;
//   - list a queue's dead letters (the first 50, with their cause,
//     attempts and 256 bytes of payload, escaped), and retry or purge
//     one, the selected, or all (a checkbox confirms "all");
//   - run a delayed item now; cancel a pending or delayed task
//     ([inspect.Inspector.Cancel]);
//   - follow a chain's step or a fan-out's child to the chain's steps or
//     the fan-out's children, and their states (read-only).
//
// Every action is a form POST to the page's own URL; a GET never changes
// anything, whatever its query. A POST is refused with 403, changing
// nothing, unless it passes two checks. net/http's CrossOriginProtection
// refuses a browser's cross-origin request (by Sec-Fetch-Site, or Origin
// against Host), which is what a forged form on another site, or on a
// sibling subdomain whose cookies reach the dashboard, sends. And its
// form carries the page's token: an HMAC-SHA256, under the key the host
// gives, of an expiry (2 hours) and the operator's name, compared in
// constant time. The token keeps no server state, so a page served by
// one replica is accepted by any other that has the same key, and a
// request without browser headers (a script, an old browser) still
// needs a token read from the page of that same operator.
//
// The dashboard authenticates no one: mount it behind the host's own
// auth middleware, and give WithActions the function that names the
// request's operator (see [ExampleWithActions]); a request it names no
// one for may not act. Each action is logged
// ([WithLogger]) and traced ([WithTracerProvider]) with that name, the
// action, its job or queue, and how many items it moved; a refused one
// is logged as a warning.
package dashboard
