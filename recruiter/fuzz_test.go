package recruiter_test

import (
	"cmp"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// validName is the documented rule for job names and prefixes, written
// independently of internal/names: 1 to 128 bytes of [A-Za-z0-9._-].
func validName(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", rune(c)) {
			return false
		}
	}
	return true
}

// wantNaming fails unless err wraps target and names one of the fields
// that are out of range: the message must point the operator at a culprit.
func wantNaming(t *testing.T, err, target error, culprits []string, input any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%+v: error %v, want %v", input, err, target)
	}
	for _, c := range culprits {
		if strings.Contains(err.Error(), c) {
			return
		}
	}
	t.Fatalf("%+v: error %q names none of %v", input, err, culprits)
}

// FuzzRegister: any job name and any Rate, Budget and Every (NaN, ±Inf,
// negative, huge) are registered with sane values or refused with
// ErrInvalidJob naming the field, without a panic or a Redis call. An
// accepted name can make no key outside the prefix: it has no ':' or brace.
func FuzzRegister(f *testing.F) {
	f.Add("tidy.orders", 0.5, int64(0), int64(0))
	f.Add("", 0.1, int64(time.Second), int64(time.Minute))
	f.Add("a:b", 1.0, int64(1), int64(-1))
	f.Add("{tag}", math.NaN(), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add("x}:lock:{y", math.Inf(1), int64(math.MinInt64), int64(math.MinInt64))
	f.Add("j", math.Inf(-1), int64(time.Minute), int64(time.Nanosecond))
	f.Add("j", 5e-324, int64(time.Minute+1), int64(0))
	f.Add("j", math.Nextafter(1, 2), int64(time.Millisecond-1), int64(0))
	f.Add(strings.Repeat("n", 129), 0.5, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, name string, rate float64, budget, every int64) {
		rec := newRecruiter(t, offlineClient(t), recruiter.Config{Prefix: "fuzz"}, nil)
		cfg := recruiter.JobConfig{Rate: rate, Budget: time.Duration(budget), Every: time.Duration(every)}
		err := rec.Register(recruiter.Func(name, noop), cfg)

		var culprits []string
		if !validName(name) {
			culprits = append(culprits, "name")
		}
		// Rate 0 is automatic pace, which needs Every (at least
		// AutoEveryMin); an error for neither names both.
		if !(rate > 0 && rate <= 1) && !(rate == 0 && every > 0) { // false for NaN
			culprits = append(culprits, "Rate")
		}
		if b := cmp.Or(cfg.Budget, recruiter.BudgetDefault); b < recruiter.BudgetMin || b > recruiter.BudgetMax {
			culprits = append(culprits, "Budget")
		}
		if cfg.Every < 0 || cfg.Every > recruiter.EveryMax || rate == 0 && cfg.Every < recruiter.AutoEveryMin {
			culprits = append(culprits, "Every")
		}
		if len(culprits) > 0 {
			wantNaming(t, err, recruiter.ErrInvalidJob, culprits, cfg)
			if n := len(rec.Stats().Jobs); n != 0 {
				t.Fatalf("a refused job is registered: %d jobs", n)
			}
			return
		}
		if err != nil {
			t.Fatalf("Register(%q, %+v): %v", name, cfg, err)
		}
		jobs := rec.Stats().Jobs
		want := recruiter.JobConfig{Rate: rate, Budget: cmp.Or(cfg.Budget, recruiter.BudgetDefault), Every: cfg.Every}
		if len(jobs) != 1 || jobs[0].Name != name || jobs[0].Rate != want.Rate || jobs[0].Budget != want.Budget || jobs[0].Every != want.Every {
			t.Fatalf("Register(%q, %+v) gave %+v; want %+v", name, cfg, jobs, want)
		}
		if strings.ContainsAny(name, ":{}") {
			t.Fatalf("accepted name %q could escape the key prefix or its slot", name)
		}
	})
}

// FuzzConfig: any durations and counts, and any prefix, make a Recruiter
// with sane values or are refused with ErrInvalidConfig naming the field.
func FuzzConfig(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), int64(0), int64(0), "")
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), "a:b")
	f.Add(int64(time.Hour), int64(1000), int64(10*time.Millisecond), int64(1024), int64(30*time.Second), "p")
	f.Add(int64(time.Hour+1), int64(1001), int64(10*time.Millisecond-1), int64(1025), int64(30*time.Second+1), "{p}")
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), "*")
	f.Add(int64(math.MinInt64), int64(math.MinInt64), int64(math.MinInt64), int64(math.MinInt64), int64(math.MinInt64), strings.Repeat("p", 129))
	f.Add(int64(0), int64(1<<32+3), int64(0), int64(1<<32+1), int64(0), "p")
	f.Fuzz(func(t *testing.T, cooldown, threshold, idle, maxConcurrent, timeout int64, prefix string) {
		cfg := recruiter.Config{
			BreakerCooldown:  time.Duration(cooldown),
			BreakerThreshold: int(threshold),
			TrafficOnly:      idle%2 == 0, // any value is valid
			MaxConcurrent:    int(maxConcurrent),
			Prefix:           prefix,
			RedisTimeout:     time.Duration(timeout),
		}
		var culprits []string
		if cooldown < 0 || cfg.BreakerCooldown > time.Hour {
			culprits = append(culprits, "BreakerCooldown")
		}
		if threshold < 0 || threshold > 1000 {
			culprits = append(culprits, "BreakerThreshold")
		}
		if maxConcurrent < 0 || maxConcurrent > 1024 {
			culprits = append(culprits, "MaxConcurrent")
		}
		if timeout < 0 || cfg.RedisTimeout > 30*time.Second {
			culprits = append(culprits, "RedisTimeout")
		}
		if prefix != "" && !validName(prefix) {
			culprits = append(culprits, "Prefix")
		}
		rec, err := recruiter.New(offlineClient(t), cfg)
		if len(culprits) > 0 {
			if rec != nil {
				t.Fatalf("New(%+v) accepted garbage", cfg)
			}
			wantNaming(t, err, recruiter.ErrInvalidConfig, culprits, cfg)
			return
		}
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		// Shut down at once: the pace timer must stop (goleak).
		if err := rec.Shutdown(t.Context()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	})
}

// FuzzSchedule: any expression is parsed or refused, never a panic (the
// parser panics on some, such as "TZ=0"), and a schedule accepted has
// ticks that move forward.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/10 * * * * *", "@daily", "@every 1s", "TZ=0", "CRON_TZ=", "CRON_TZ=Europe/Paris 0 3 * * *",
		"TZ=America/New_York 30 1 * * *", "0 0 30 2 *", "1-5/0 * * * *", "@", "60 * * * * *", "* * * * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		next, err := recruiter.ParseSchedule(expr)
		if err != nil {
			return
		}
		at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		for range 3 {
			n := next(at)
			if !n.After(at) {
				t.Fatalf("%q: next(%v) = %v, not after it", expr, at, n)
			}
			at = n
		}
	})
}
