// Package rolling is worksteal's mixed-versions suite: tests, and only
// tests, that run the previous release's programs beside this release's
// on one Redis, as a rolling deploy does, and prove that they
// interoperate on the same queues.
//
// The previous release is commit b3b2630 (main before issue 37; its
// scripts are internal/qstore/testdata/previous, which
// TestPreviousReleaseBesideThisOne in internal/qstore runs beside this
// release's). The test extracts its tree with git archive, adds the
// driver testdata/previousmux to it as cmd/previousmux of its root module,
// and builds it there with that release's go.mod (GOWORK=off): the
// driver uses that release's public API only. It enqueues a mix of tasks,
// or runs that release's tasks.Mux through a recruiter enlisted inline,
// logging each handler run as a whole line.
//
// # What it proves
//
// TestPreviousReleaseMuxBesideThisOne, in three directions on one queue:
//
//   - tasks this release enqueues, with their trace contexts (a real
//     OpenTelemetry SDK provider), are run by the previous release; the
//     retries of those whose first run failed there are run by this one,
//     which reads the attempts the previous release counted;
//   - tasks the previous release enqueues are run by this one, some of
//     whose first runs snooze (tasks.Snooze), ask for a retry later
//     (tasks.RetryAfter) or fail; the previous release runs them again;
//   - a mixed set that both enqueue is run by both at once.
//
// The mix holds plain tasks, tasks with a priority, unique ones (the
// duplicate adds nothing), delayed ones, chains of 3 and fan-outs of 3
// with a final step, some of whose steps fail their first run. Every task
// must succeed exactly once with the right result (a second run only
// where the first failed or snoozed), chains and fan-outs must end done
// with their results, the queue must hold nothing pending, leased,
// delayed or dead, and what this release keeps beside tasks (trace
// contexts, the traced marker, snooze counts), which the previous
// release leaves behind when it acks them, must expire within a week.
//
// # Running
//
//	go test -race -count=1 -v ./test/rolling/
//
// It needs redis-server on PATH (Debian: apt-get install redis-server),
// git and the repository's history with commit b3b2630 (in a shallow
// clone: git fetch --unshallow); it fails, never skips, without them.
// The previous release's first build compiles its dependencies (nearly 4
// minutes on a loaded two-core machine); later runs take them from Go's
// build cache (the build is -trimpath, so wherever the tree is extracted):
// the test then takes about 15 seconds, 35 beside two CPU hogs, of which
// 3 per direction wait for the tasks held back between releases.
package rolling
