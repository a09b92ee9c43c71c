package faults_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// The outage test's figures. The issue asks for a 10s outage; the whole
// test takes about 15s and runs beside the others, so it fits.
const (
	outage          = 10 * time.Second
	outageCooldown  = time.Second // BreakerCooldown: one probe per second of outage
	outageThreshold = 3
	outageSlots     = 2 // MaxConcurrent
	outageInterval  = 20 * time.Millisecond
	keptItems       = 100
	// outageRedisTimeout is the recruiters' RedisTimeout: a request that
	// waited out one Redis call would take that long.
	outageRedisTimeout = 2 * time.Second
	// latencyBound is the p99 a request must stay under while Redis is
	// down or slow: many times a loopback request's (about 10ms with -race
	// on a loaded machine), under half this test's RedisTimeout and the
	// slow test's delay, so that a request that had waited on Redis would
	// exceed it, and generous enough for a loaded CI machine: at 250ms, a
	// stall of ~275ms that held all three stacks' requests at once (the
	// process, not Redis) failed it on a busy 2-core machine.
	latencyBound = 750 * time.Millisecond
)

// outageStack is one stack of the outage test with its own recruiter,
// like one web server of a fleet.
type outageStack struct {
	stack
	rec    *recruiter.Recruiter
	dials  *dialCounter
	logs   *logBuffer
	load   *load
	ticks  string // the Redis counter its job increments
	prefix string
}

// TestRedisOutageUnderLoad kills a persistent Redis for ten seconds under
// steady load through net/http, echo and gRPC (a few hundred requests a
// second each, every one a fast exit, a job drawn by half of them), then
// restarts it. No request fails or slows; the breakers bound connection
// attempts by the outage's length, not by the requests; slices resume
// within seconds of Redis's return; the queue kept in Redis survives.
func TestRedisOutageUnderLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always", "--dir", t.TempDir())
	admin := srv.Client(t)
	ctx := testrig.Context(t, time.Minute)
	q, err := queue.New(admin, "kept", queue.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, keptItems)
	for i := range payloads {
		payloads[i] = []byte("kept-" + strconv.Itoa(i))
	}
	ids, err := q.EnqueueBatch(ctx, payloads)
	if err != nil {
		t.Fatal(err)
	}

	var fleet []*outageStack
	for _, st := range stacks {
		s := &outageStack{stack: st, logs: &logBuffer{}, prefix: redistest.Prefix(t) + "-" + st.name}
		s.ticks = s.prefix + ":ticks"
		var rdb *redis.Client
		rdb, s.dials = countedClient(t, srv, srv.Addr())
		s.rec = newRecruiter(t, rdb, recruiter.Config{
			BreakerCooldown: outageCooldown, BreakerThreshold: outageThreshold, MaxConcurrent: outageSlots,
			Prefix: s.prefix, RedisTimeout: outageRedisTimeout, Logger: newLogger(s.logs),
		})
		mustRegister(t, s.rec, recruiter.Func("tick", func(ctx context.Context) (recruiter.Report, error) {
			if err := rdb.Incr(ctx, s.ticks).Err(); err != nil {
				return recruiter.Report{}, err
			}
			return recruiter.Report{Items: 1}, nil
		}), recruiter.JobConfig{Rate: 0.5, Budget: 20 * time.Millisecond})
		s.load = startLoad(t, st.serve(t, s.rec), outageInterval)
		fleet = append(fleet, s)
	}
	for _, s := range fleet {
		testrig.Eventually(t, 20*time.Second, s.name+": slices running before the outage", func() bool {
			return jobStats(t, s.rec, "tick").Ran >= 20
		})
	}

	killedAt := time.Now()
	dialsAtKill := make([]int64, len(fleet))
	for i, s := range fleet {
		dialsAtKill[i] = s.dials.Load()
	}
	srv.Kill()
	for _, s := range fleet {
		testrig.Eventually(t, outage, s.name+": breaker open", func() bool { return s.rec.Stats().BreakerOpen })
	}
	// The outage's length is the fault itself, not a wait for a condition.
	time.Sleep(time.Until(killedAt.Add(outage)))
	restartedAt := time.Now()
	ranAtRestart := make([]uint64, len(fleet))
	dialsInOutage := make([]int64, len(fleet))
	for i, s := range fleet {
		ranAtRestart[i] = jobStats(t, s.rec, "tick").Ran
		dialsInOutage[i] = s.dials.Load() - dialsAtKill[i]
	}
	srv.Restart()

	resumedAfter := make([]time.Duration, len(fleet))
	for i, s := range fleet {
		testrig.Eventually(t, outageCooldown+10*time.Second, s.name+": slices resumed after the restart", func() bool {
			return jobStats(t, s.rec, "tick").Ran > ranAtRestart[i]
		})
		resumedAfter[i] = time.Since(restartedAt)
	}
	for _, s := range fleet {
		s.load.Stop()
		testrig.Eventually(t, 5*time.Second, s.name+": slices ended", func() bool { return s.rec.Stats().InFlight == 0 })
	}

	// Attempts to the dead port: the threshold's, one probe per cooldown,
	// and the slices already past the gate when the breaker opened.
	dialBound := int64(outageThreshold + outageSlots + int(outage/outageCooldown) + 2)
	for i, s := range fleet {
		before := s.load.window(time.Time{}, killedAt)
		during := s.load.window(killedAt, restartedAt)
		after := s.load.window(restartedAt, time.Now().Add(time.Hour))
		js := jobStats(t, s.rec, "tick")
		ticks, err := admin.Get(ctx, s.ticks).Int64()
		if err != nil {
			t.Fatalf("%s: read %s after the restart: %v", s.name, s.ticks, err)
		}
		t.Logf("%s: before the outage %v; during (%v) %v; after %v", s.name, before, outage, during, after)
		t.Logf("%s: %d dials during the outage (bound %d) for %d requests; resumed %v after the restart; job %+v; counter %d after the restart, %d items counted",
			s.name, dialsInOutage[i], dialBound, during.requests, resumedAfter[i].Round(time.Millisecond), statsLine(js), ticks, js.Items)
		for _, w := range []window{before, during, after} {
			if w.failed != 0 {
				t.Errorf("%s: %d of %d requests failed; first: %v", s.name, w.failed, w.requests, w.firstErr)
			}
		}
		if during.requests < int(outage/outageInterval) {
			t.Errorf("%s: only %d requests during the outage: the load stalled", s.name, during.requests)
		}
		if during.p99 > latencyBound {
			t.Errorf("%s: p99 latency %v during the outage (before: %v), above %v: requests waited on Redis", s.name, during.p99, before.p99, latencyBound)
		}
		if dialsInOutage[i] > dialBound {
			t.Errorf("%s: %d connection attempts during a %v outage, above the breaker's bound %d", s.name, dialsInOutage[i], outage, dialBound)
		}
		if js.Errors == 0 || s.logs.count("recruitment paused") == 0 {
			t.Errorf("%s: the outage was neither counted (%d errors) nor logged as a pause", s.name, js.Errors)
		}
		if s.rec.Stats().BreakerOpen {
			t.Errorf("%s: the breaker is still open after slices resumed", s.name)
		}
		// appendfsync always: every INCR the job saw succeed was on disk.
		if ticks < int64(js.Items) {
			t.Errorf("%s: the counter is %d after the restart, below the %d increments acknowledged", s.name, ticks, js.Items)
		}
	}
	checkKept(t, ctx, q, ids, payloads)
}

// checkKept: the queue holds exactly what was enqueued before the outage.
func checkKept(t *testing.T, ctx context.Context, q *queue.Queue, ids []string, payloads [][]byte) {
	t.Helper()
	st, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st != (queue.Depth{Pending: int64(len(ids)), OldestPending: st.OldestPending}) {
		t.Fatalf("queue after the restart: %+v, want %d pending and nothing else", st, len(ids))
	}
	for i, id := range ids {
		v, err := q.Value(ctx, id)
		if err != nil || string(v) != string(payloads[i]) {
			t.Fatalf("item %s after the restart: %q, %v; want %q", id, v, err, payloads[i])
		}
	}
	t.Logf("queue after the restart: %d of %d items intact, 0 lost", len(ids), len(ids))
}

// statsLine is the part of a job's counters worth quoting.
func statsLine(js recruiter.JobStats) string {
	return fmt.Sprintf("ran %d, errors %d, timeouts %d, skipped %d locked/%d gate, items %d",
		js.Ran, js.Errors, js.Timeouts, js.SkippedLocked, js.SkippedGate, js.Items)
}
