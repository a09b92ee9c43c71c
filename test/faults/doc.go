// Package faults is worksteal's fault suite: tests, and only tests, that
// prove the invariants of DESIGN.md while real faults happen to real
// processes. Every test starts its own redis-server processes on loopback
// (through internal/redistest), real servers for net/http, echo and gRPC
// with real clients, and, where a crash is the fault, worker processes
// re-executed from the test binary.
//
// # What it proves
//
//   - Redis killed for seconds and restarted (with an append-only file),
//     under steady load through each middleware: no request fails or waits
//     on Redis, the circuit breaker bounds the connection attempts by the
//     outage's length rather than by the traffic, slices resume once Redis
//     returns, and a queue's contents survive (TestRedisOutageUnderLoad).
//   - Redis slowed down (a proxy delaying every reply) and then cutting
//     connections: requests unaffected, slices end at their budget, every
//     goroutine they started ends (TestSlowAndDroppingRedis).
//   - A worker that holds a job's lock mid-slice is frozen (SIGSTOP) past
//     its lock's life; another takes the job over; the frozen one wakes and
//     tries to settle: its stale acks are refused by the claim token, and
//     every item ends with exactly one result (TestPausedLockHolder).
//   - Worker processes SIGKILLed at random points mid-drain, many times:
//     through the recruiter, jobs.Drain and jobs.TidyStale as deployed,
//     nothing is lost, nothing is settled twice, only failing items die
//     (TestWorkersKilledMidDrain).
//   - Shutdown while requests keep arriving: it returns within the slices'
//     budgets, every slice in flight settles or hands back its items, and
//     no goroutine is left (TestShutdownUnderLoad).
//
// Each test logs its figures (faults injected, requests served, items
// checked, items lost) with t.Logf: run with -v to read them.
//
// # Running
//
//	go test -race -count=1 -v ./test/faults/
//
// It needs redis-server on PATH (Debian: apt-get install redis-server) and
// fails, never skips, without it. The whole folder is sized to run in
// about a minute on a loaded two-core machine, as part of go test ./...
package faults
