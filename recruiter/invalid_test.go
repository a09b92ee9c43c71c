package recruiter_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// The bounds themselves, which register_test.go covers only from afar:
// each limit is accepted, one step past it is refused naming the field.
func TestConfigBoundsAreExact(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	for _, tc := range []struct {
		field      string
		ok, refuse recruiter.Config
	}{
		{"BreakerCooldown", recruiter.Config{BreakerCooldown: time.Hour}, recruiter.Config{BreakerCooldown: time.Hour + 1}},
		{"BreakerThreshold", recruiter.Config{BreakerThreshold: 1000}, recruiter.Config{BreakerThreshold: 1001}},
		{"MaxConcurrent", recruiter.Config{MaxConcurrent: 1024}, recruiter.Config{MaxConcurrent: 1025}},
		{"RedisTimeout", recruiter.Config{RedisTimeout: 30 * time.Second}, recruiter.Config{RedisTimeout: 30*time.Second + 1}},
		{"Prefix", recruiter.Config{Prefix: strings.Repeat("p", 128)}, recruiter.Config{Prefix: strings.Repeat("p", 129)}},
		{"Prefix", recruiter.Config{Prefix: "a.b_c-D9"}, recruiter.Config{Prefix: "a:b"}},
		{"Prefix", recruiter.Config{}, recruiter.Config{Prefix: "*"}},
		{"BreakerCooldown", recruiter.Config{}, recruiter.Config{BreakerCooldown: math.MinInt64}},
		{"MaxConcurrent", recruiter.Config{}, recruiter.Config{MaxConcurrent: math.MaxInt}},
	} {
		rec, err := recruiter.New(rdb, tc.ok)
		if err != nil {
			t.Errorf("New(%+v): %v; want it accepted", tc.ok, err)
		} else if err := rec.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		rec, err = recruiter.New(rdb, tc.refuse)
		if rec != nil || !errors.Is(err, recruiter.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New(%+v) = %v, %v; want ErrInvalidConfig naming %s", tc.refuse, rec, err, tc.field)
		}
	}
}

func TestJobConfigBoundsAreExact(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Config{}, nil)
	for i, tc := range []struct {
		field      string
		ok, refuse recruiter.JobConfig
	}{
		{"Budget", recruiter.JobConfig{Rate: 0.1, Budget: recruiter.BudgetMax}, recruiter.JobConfig{Rate: 0.1, Budget: recruiter.BudgetMax + 1}},
		{"Budget", recruiter.JobConfig{Rate: 0.1, Budget: recruiter.BudgetMin}, recruiter.JobConfig{Rate: 0.1, Budget: recruiter.BudgetMin - 1}},
		{"Budget", recruiter.JobConfig{Rate: 0.1}, recruiter.JobConfig{Rate: 0.1, Budget: math.MinInt64}},
		{"Rate", recruiter.JobConfig{Rate: 5e-324}, recruiter.JobConfig{Rate: -5e-324}},
		{"Rate", recruiter.JobConfig{Rate: 0.1}, recruiter.JobConfig{Rate: math.Inf(-1)}},
		{"Every", recruiter.JobConfig{Rate: 0.1, Every: 1}, recruiter.JobConfig{Rate: 0.1, Every: math.MinInt64}},
		{"Every", recruiter.JobConfig{Rate: 0.1, Every: recruiter.EveryMax}, recruiter.JobConfig{Rate: 0.1, Every: recruiter.EveryMax + 1}},
	} {
		name := "job-" + string(rune('a'+i))
		if err := rec.Register(recruiter.Func(name+"-refused", noop), tc.refuse); !errors.Is(err, recruiter.ErrInvalidJob) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Register(%+v) = %v; want ErrInvalidJob naming %s", tc.refuse, err, tc.field)
		}
		if err := rec.Register(recruiter.Func(name, noop), tc.ok); err != nil {
			t.Errorf("Register(%+v): %v; want it accepted", tc.ok, err)
		}
	}
	if n := len(rec.Stats().Jobs); n != 7 {
		t.Fatalf("%d jobs registered, want the 7 accepted ones", n)
	}
}

// Any roll, however wild, follows the draw's rule: below 0 draws the first
// job; 1 or more, or NaN, is dismissed. None panics.
func TestWildRollsFollowTheDoc(t *testing.T) {
	t.Parallel()
	for roll, want := range map[float64]string{
		math.Inf(-1): "first", -1e300: "first", math.Copysign(0, -1): "first", 0.3: "second",
		0.5: "", 1: "", math.Inf(1): "", math.NaN(): "", math.MaxFloat64: "",
	} {
		rec := newRecruiter(t, offlineClient(t), recruiter.Hooked(recruiter.Config{}, fixedRoll(roll), nil), nil)
		mustRegister(t, rec, recruiter.Func("first", noop), recruiter.JobConfig{Rate: 0.25})
		mustRegister(t, rec, recruiter.Func("second", noop), recruiter.JobConfig{Rate: 0.25})
		if got := rec.Draw().Job(); got != want {
			t.Errorf("roll %v drew %q, want %q", roll, got, want)
		}
	}
}

// A Func made with a nil function cannot be refused at Register (the Job
// hides it), but its slices must not take the process down: the panic is
// recovered and counted.
func TestNilFuncPanicsOnlyItsSlice(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true, Prefix: "nilfunc"})
	mustRegister(t, b.rec, recruiter.Func("nil-run", nil), recruiter.JobConfig{Rate: 1})
	b.rec.Enlist(context.Background())
	if js := jobStats(t, b.rec, "nil-run"); js.Panics != 1 || js.Ran != 0 {
		t.Fatalf("stats = %+v, want one panic", js)
	}
}

// An Every past any sensible value is accepted by Register; it must then
// mean what it says: the job runs once, and further enlistments are held
// back by this process's cool-off without asking Redis (as for any Every,
// see TestLocalCoolOffBoundsRedisTraffic). The cool-off is kept as unix
// nanoseconds, which end in 2262: an Every that reaches past that must be
// refused at Register or clamped.
func TestHugeEveryIsRefusedOrHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true, Prefix: "huge-every"})
	var runs atomic.Int32
	job := recruiter.Func("rare", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{Items: 1}, nil
	})
	every := time.Duration(math.MaxInt64)
	if err := b.rec.Register(job, recruiter.JobConfig{Rate: 1, Every: every}); err != nil {
		if !errors.Is(err, recruiter.ErrInvalidJob) || !strings.Contains(err.Error(), "Every") {
			t.Fatalf("Register with Every %v: %v; want ErrInvalidJob naming Every", every, err)
		}
		return // refused: fine
	}
	ctx := context.Background()
	b.rec.Enlist(ctx)
	if runs.Load() != 1 {
		t.Fatalf("the first enlistment ran the job %d times, want 1", runs.Load())
	}
	scripts := func() int64 { return b.srv.CommandCalls(t, "evalsha") + b.srv.CommandCalls(t, "eval") }
	before := scripts()
	for range 100 {
		b.rec.Enlist(ctx)
	}
	calls := scripts() - before
	if runs.Load() != 1 || calls > 4 {
		t.Fatalf("with Every %v, 100 more enlistments ran the job %d more times and made %d script calls; want 0 runs and at most 4 calls (stats %+v)",
			every, runs.Load()-1, calls, jobStats(t, b.rec, "rare"))
	}
}

// A lock key that someone gave a TTL of centuries (a "pause for ever")
// must hold this process back like any held lock: the TTL the probe learns
// is bounded before it becomes a cool-off, so the cool-off's unix
// nanoseconds (which end in 2262) do not overflow into "not cooling off",
// which would turn every draw into Redis traffic.
func TestCenturiesLongLockTTLStillCoolsOff(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"cooldown", "someone-elses-token"} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			b := setup(t, recruiter.Config{Inline: true, Prefix: "paused-" + value[:4]})
			var runs atomic.Int32
			job := recruiter.Func("paused", func(context.Context) (recruiter.Report, error) {
				runs.Add(1)
				return recruiter.Report{}, nil
			})
			if err := b.rec.Register(job, recruiter.JobConfig{Rate: 1}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rdb := b.rdb
			key := "paused-" + value[:4] + ":lock:paused"
			if err := rdb.Set(ctx, key, value, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Do(ctx, "EXPIRE", key, 250*365*24*3600).Err(); err != nil {
				t.Fatal(err)
			}
			scripts := func() int64 { return b.srv.CommandCalls(t, "evalsha") + b.srv.CommandCalls(t, "eval") }
			before := scripts()
			for range 100 {
				b.rec.Enlist(ctx)
			}
			if calls := scripts() - before; runs.Load() != 0 || calls > 4 {
				t.Fatalf("100 enlistments against a lock paused for centuries ran the job %d times and made %d script calls; want 0 runs and at most 4 calls (stats %+v)",
					runs.Load(), calls, jobStats(t, b.rec, "paused"))
			}
		})
	}
}
