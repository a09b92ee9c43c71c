package recruiter_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/recruiter"
)

// commandCounter counts the commands of one name that a client sends.
type commandCounter struct {
	name string
	n    atomic.Int64
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), c.name) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestBreakerProbesAsSoonAsRedisAnswers: with the breaker open and its
// cooldown an hour away, enlistments check Redis once every fifth of the
// cooldown, whatever their number; a check that finds Redis back lets
// that slice probe, and run, at once. Without the checks no slice would
// run before the hour is out.
func TestBreakerProbesAsSoonAsRedisAnswers(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	const cooldown = time.Hour
	b := setup(t, recruiter.Hooked(recruiter.Config{
		BreakerCooldown:  cooldown,
		BreakerThreshold: 1,
		Inline:           true, // each Enlist runs its slice, or its check, before it returns
		RedisTimeout:     time.Second,
	}, fixedRoll(0), clock.Now))
	checks := &commandCounter{name: "pttl"}
	b.rdb.AddHook(checks)
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("chore", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{Items: 1, More: true}, nil // More: no cool-off between slices
	}), recruiter.JobConfig{Rate: 1})
	ctx := context.Background()
	enlist := func(n int) {
		for range n {
			b.rec.Enlist(ctx)
		}
	}

	enlist(1)
	if runs.Load() != 1 {
		t.Fatalf("%d runs with Redis up, want 1", runs.Load())
	}
	b.srv.Kill()
	enlist(1)
	if !b.rec.Stats().BreakerOpen {
		t.Fatal("a failed lock call at threshold 1 left the breaker closed")
	}
	failed := jobStats(t, b.rec, "chore").Errors
	opened := clock.Now()

	clock.Advance(cooldown/5 - time.Second)
	enlist(100)
	if n := checks.n.Load(); n != 0 {
		t.Fatalf("%d checks before a fifth of the cooldown had passed, want 0", n)
	}
	clock.Advance(time.Second)
	enlist(100)
	js := jobStats(t, b.rec, "chore")
	if n := checks.n.Load(); n != 1 || runs.Load() != 1 || !b.rec.Stats().BreakerOpen || js.Errors != failed {
		t.Fatalf("100 enlistments with a check due and Redis down: %d checks (want 1), %d runs (want 1), breaker open %v (want true), "+
			"%d errors (want %d: a failed check is not a failed slice)", n, runs.Load(), b.rec.Stats().BreakerOpen, js.Errors, failed)
	}

	b.srv.Restart()
	enlist(100)
	if n := checks.n.Load(); n != 1 || runs.Load() != 1 {
		t.Fatalf("Redis back, the next check not yet due: %d checks (want 1), %d runs (want 1)", n, runs.Load())
	}
	clock.Advance(cooldown / 5)
	enlist(1)
	if n := checks.n.Load(); n != 2 || runs.Load() != 2 {
		t.Fatalf("Redis back and a check due: %d checks (want 2), %d runs (want 2: the check lets its slice probe)", n, runs.Load())
	}
	if b.rec.Stats().BreakerOpen {
		t.Fatal("the probe's slice ran but the breaker is still open")
	}
	t.Logf("a slice ran %v after the breaker opened, with a %v cooldown", clock.Now().Sub(opened), cooldown)
	enlist(10)
	if runs.Load() != 12 || checks.n.Load() != 2 {
		t.Fatalf("breaker closed: %d runs after 10 more enlistments (want 12), %d checks (want still 2)", runs.Load(), checks.n.Load())
	}
}
