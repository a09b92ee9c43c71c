package recruiter_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/recruiter"
)

func noop(context.Context) (recruiter.Report, error) { return recruiter.Report{}, nil }

// offlineClient fails the test on any command: the tests using it prove
// that the code under test never talks to Redis.
func offlineClient(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	rdb.AddHook(forbidden{t})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

type forbidden struct{ t *testing.T }

func (f forbidden) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f forbidden) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f.t.Errorf("a Redis command was sent: %v", cmd.Args())
		return next(ctx, cmd)
	}
}

func (f forbidden) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		f.t.Errorf("a Redis pipeline was sent: %d commands", len(cmds))
		return next(ctx, cmds)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	cases := []struct {
		name  string
		cfg   recruiter.Config
		field string
	}{
		{"negative breaker cooldown", recruiter.Config{BreakerCooldown: -time.Second}, "BreakerCooldown"},
		{"negative breaker threshold", recruiter.Config{BreakerThreshold: -1}, "BreakerThreshold"},
		{"negative max concurrent", recruiter.Config{MaxConcurrent: -1}, "MaxConcurrent"},
		{"negative redis timeout", recruiter.Config{RedisTimeout: -1}, "RedisTimeout"},
		{"absurd redis timeout", recruiter.Config{RedisTimeout: time.Hour}, "RedisTimeout"},
		{"absurd max concurrent", recruiter.Config{MaxConcurrent: 1 << 32}, "MaxConcurrent"},
		{"absurd breaker threshold", recruiter.Config{BreakerThreshold: 1 << 31}, "BreakerThreshold"},
		{"absurd breaker cooldown", recruiter.Config{BreakerCooldown: 48 * time.Hour}, "BreakerCooldown"},
		{"prefix with a space", recruiter.Config{Prefix: "my app"}, "Prefix"},
		{"prefix with a brace", recruiter.Config{Prefix: "{app}"}, "Prefix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := recruiter.New(rdb, tc.cfg)
			if !errors.Is(err, recruiter.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New(%+v) = %v, %v; want ErrInvalidConfig naming %s", tc.cfg, rec, err, tc.field)
			}
		})
	}
	if _, err := recruiter.New(nil, recruiter.Config{}); !errors.Is(err, recruiter.ErrInvalidConfig) {
		t.Fatalf("New(nil client) = %v, want ErrInvalidConfig", err)
	}
}

func TestRegisterRejectsInvalidJobs(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Config{}, nil)
	mustRegister(t, rec, recruiter.Func("taken", noop), recruiter.JobConfig{Rate: 0.5})

	cases := []struct {
		name    string
		job     recruiter.Job
		cfg     recruiter.JobConfig
		want    error
		mention string
	}{
		{"nil job", nil, recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "nil"},
		{"empty name", recruiter.Func("", noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "empty"},
		{"name with colon", recruiter.Func("a:b", noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "[A-Za-z0-9._-]"},
		{"name with space", recruiter.Func("tidy queue", noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "[A-Za-z0-9._-]"},
		{"name with unicode", recruiter.Func("tidé", noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "[A-Za-z0-9._-]"},
		{"name too long", recruiter.Func(strings.Repeat("x", 129), noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrInvalidJob, "longer than 128"},
		{"duplicate", recruiter.Func("taken", noop), recruiter.JobConfig{Rate: 0.1}, recruiter.ErrDuplicateJob, "taken"},
		{"neither rate nor every", recruiter.Func("j", noop), recruiter.JobConfig{}, recruiter.ErrInvalidJob, "set Every"},
		{"automatic every too short", recruiter.Func("j", noop), recruiter.JobConfig{Every: time.Millisecond}, recruiter.ErrInvalidJob, "Every"},
		{"negative rate", recruiter.Func("j", noop), recruiter.JobConfig{Rate: -0.1}, recruiter.ErrInvalidJob, "Rate"},
		{"rate above one", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 1.5}, recruiter.ErrInvalidJob, "Rate"},
		{"NaN rate", recruiter.Func("j", noop), recruiter.JobConfig{Rate: math.NaN()}, recruiter.ErrInvalidJob, "Rate"},
		{"infinite rate", recruiter.Func("j", noop), recruiter.JobConfig{Rate: math.Inf(1)}, recruiter.ErrInvalidJob, "Rate"},
		{"rates sum past one", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 0.6}, recruiter.ErrInvalidJob, "sum of rates"},
		{"negative budget", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 0.1, Budget: -time.Millisecond}, recruiter.ErrInvalidJob, "Budget"},
		{"budget of a nanosecond", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 0.1, Budget: 1}, recruiter.ErrInvalidJob, "Budget"},
		{"absurd budget", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 0.1, Budget: time.Hour}, recruiter.ErrInvalidJob, "Budget"},
		{"negative every", recruiter.Func("j", noop), recruiter.JobConfig{Rate: 0.1, Every: -time.Second}, recruiter.ErrInvalidJob, "Every"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := rec.Register(tc.job, tc.cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Register = %v; want %v mentioning %q", err, tc.want, tc.mention)
			}
		})
	}
	// Nothing invalid got in, and the defaults were applied to the valid one.
	jobs := rec.Stats().Jobs
	if len(jobs) != 1 || jobs[0].Name != "taken" || jobs[0].Budget != recruiter.BudgetDefault {
		t.Fatalf("jobs after invalid registrations = %+v; want only \"taken\" with the default budget", jobs)
	}
	// Rates up to exactly 1 are fine, even with float rounding.
	for i := range 5 {
		mustRegister(t, rec, recruiter.Func("tenth-"+string(rune('a'+i)), noop), recruiter.JobConfig{Rate: 0.1})
	}
}

func TestRegisterAfterShutdown(t *testing.T) {
	t.Parallel()
	rec, err := recruiter.New(offlineClient(t), recruiter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rec.Register(recruiter.Func("late", noop), recruiter.JobConfig{Rate: 1}); !errors.Is(err, recruiter.ErrClosed) {
		t.Fatalf("Register after Shutdown = %v, want ErrClosed", err)
	}
}

// TestRollDistribution feeds the roll an even sweep of [0, 1): each job
// must be drawn in exactly its share, the rest dismissed, never two jobs.
func TestRollDistribution(t *testing.T) {
	t.Parallel()
	const n = 10_000
	var i int
	sweep := func() float64 { v := float64(i) / n; i++; return v }
	rec := newRecruiter(t, offlineClient(t), recruiter.Hooked(recruiter.Config{}, sweep, nil), nil)
	rates := map[string]float64{"a": 0.1, "b": 0.25, "c": 0.005}
	for _, name := range []string{"a", "b", "c"} {
		mustRegister(t, rec, recruiter.Func(name, noop), recruiter.JobConfig{Rate: rates[name]})
	}
	counts := map[string]int{}
	for range n {
		counts[rec.Draw().Job()]++
	}
	want := map[string]int{"a": 1000, "b": 2500, "c": 50, "": 6450}
	for name, w := range want {
		if counts[name] != w {
			t.Errorf("job %q drawn %d times of %d, want %d (counts %v)", name, counts[name], n, w, counts)
		}
	}
	for _, js := range rec.Stats().Jobs {
		if js.Drawn != uint64(want[js.Name]) {
			t.Errorf("Stats: %s drawn %d, want %d", js.Name, js.Drawn, want[js.Name])
		}
	}
}

// TestRollDistributionDefaultRandom checks the default source: within five
// standard deviations of each rate over 200,000 rolls.
func TestRollDistributionDefaultRandom(t *testing.T) {
	t.Parallel()
	const n = 200_000
	rec := newRecruiter(t, offlineClient(t), recruiter.Config{}, nil)
	mustRegister(t, rec, recruiter.Func("a", noop), recruiter.JobConfig{Rate: 0.3})
	mustRegister(t, rec, recruiter.Func("b", noop), recruiter.JobConfig{Rate: 0.05})
	counts := map[string]float64{}
	for range n {
		counts[rec.Draw().Job()]++
	}
	for name, p := range map[string]float64{"a": 0.3, "b": 0.05, "": 0.65} {
		sd := math.Sqrt(n * p * (1 - p))
		if d := math.Abs(counts[name] - n*p); d > 5*sd {
			t.Errorf("job %q drawn %v times, want %v ± %v", name, counts[name], n*p, 5*sd)
		}
	}
}

func TestDismissedDrawAllocatesNothing(t *testing.T) {
	rec := newRecruiter(t, offlineClient(t), recruiter.Hooked(recruiter.Config{}, fixedRoll(0.99), nil), nil)
	mustRegister(t, rec, recruiter.Func("rare", noop), recruiter.JobConfig{Rate: 0.01})
	mustRegister(t, rec, recruiter.Func("rarer", noop), recruiter.JobConfig{Rate: 0.001})
	allocs := testing.AllocsPerRun(1000, func() {
		if d := rec.Draw(); d.Recruited() {
			t.Fatal("a roll of 0.99 was recruited")
		}
	})
	if allocs != 0 {
		t.Fatalf("a dismissed draw allocates %v times, want 0", allocs)
	}
}

func TestMarkFastExit(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Hooked(recruiter.Config{}, fixedRoll(0), nil), nil)
	mustRegister(t, rec, recruiter.Func("marked", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	draw := rec.Draw()
	plain := context.Background()
	recruiter.MarkFastExit(plain) // no marker: nothing happens, no panic
	var nilCtx context.Context
	recruiter.MarkFastExit(nilCtx) // nor on a nil one
	if draw.Marked(plain) {
		t.Fatal("a context without a marker reports a fast exit")
	}
	marked := draw.Context(plain)
	if draw.Marked(marked) {
		t.Fatal("a fresh marker reports a fast exit")
	}
	child, cancel := context.WithCancel(marked)
	defer cancel()
	recruiter.MarkFastExit(child) // a handler marks its derived context
	if !draw.Marked(marked) {
		t.Fatal("MarkFastExit on a derived context was not seen through the marker's context")
	}
}

type betweenKey struct{}

// TestNestedMarkersAllSeeTheMark: two draws around one handler (two
// recruiters' middlewares, say), both drawn: a mark on the innermost
// context reaches both, not only the inner one.
func TestNestedMarkersAllSeeTheMark(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Hooked(recruiter.Config{}, fixedRoll(0), nil), nil)
	mustRegister(t, rec, recruiter.Func("nested", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	outer, inner := rec.Draw(), rec.Draw()
	outerCtx := outer.Context(context.Background())
	innerCtx := inner.Context(context.WithValue(outerCtx, betweenKey{}, "a value between the two"))
	recruiter.MarkFastExit(innerCtx)
	if !inner.Marked(innerCtx) || !outer.Marked(outerCtx) {
		t.Fatalf("inner marked %v, outer marked %v; want both", inner.Marked(innerCtx), outer.Marked(outerCtx))
	}
	// A mark on the outer context alone is not the inner draw's.
	outerCtx = outer.Context(context.Background())
	innerCtx = inner.Context(outerCtx)
	recruiter.MarkFastExit(outerCtx)
	if inner.Marked(innerCtx) || !outer.Marked(outerCtx) {
		t.Fatalf("inner marked %v, outer marked %v; want only the outer", inner.Marked(innerCtx), outer.Marked(outerCtx))
	}
}
