package recruiter_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logBuffer collects a recruiter's log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(substr string) int { return strings.Count(b.String(), substr) }

// lines counts the log lines that hold every one of substrs.
func (b *logBuffer) lines(substrs ...string) int {
	n := 0
	for line := range strings.Lines(b.String()) {
		all := true
		for _, s := range substrs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// bundle is what most tests need: a throw-away Redis, a client of it and a
// recruiter whose logs are kept.
type bundle struct {
	srv  *redistest.Server
	rdb  *redis.Client
	rec  *recruiter.Recruiter
	logs *logBuffer
}

// setup starts a Redis for the test and a recruiter on it, shut down (and
// checked to shut down cleanly) at cleanup.
func setup(t *testing.T, cfg recruiter.Config) *bundle {
	t.Helper()
	srv := redistest.Start(t)
	b := &bundle{srv: srv, rdb: srv.Client(t), logs: &logBuffer{}}
	b.rec = newRecruiter(t, b.rdb, cfg, b.logs)
	return b
}

func newRecruiter(t *testing.T, rdb redis.UniversalClient, cfg recruiter.Config, logs *logBuffer) *recruiter.Recruiter {
	t.Helper()
	if cfg.Logger == nil {
		if logs == nil {
			logs = &logBuffer{}
		}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "test-" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	}
	if cfg.Pressure == 0 {
		// The gate reads the machine's real load: off where a test is not
		// about it, so that a busy machine (or a clock a test holds still)
		// cannot hold its slices back. pressure_test.go sets it.
		cfg.Pressure = -1
	}
	rec, err := recruiter.New(rdb, cfg)
	if err != nil {
		t.Fatalf("recruiter.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return rec
}

func mustRegister(t *testing.T, rec *recruiter.Recruiter, job recruiter.Job, cfg recruiter.JobConfig) {
	t.Helper()
	if err := rec.Register(job, cfg); err != nil {
		t.Fatalf("Register(%s): %v", job.Name(), err)
	}
}

// jobStats returns the stats of the named job.
func jobStats(t testing.TB, rec *recruiter.Recruiter, name string) recruiter.JobStats {
	for _, js := range rec.Stats().Jobs {
		if js.Name == name {
			return js
		}
	}
	if t != nil {
		t.Fatalf("no stats for job %q", name)
	}
	return recruiter.JobStats{}
}

// fixedRoll returns a roll that is always v.
func fixedRoll(v float64) func() float64 { return func() float64 { return v } }

// manualClock is an injectable clock that tests move by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: time.Unix(1_700_000_000, 0)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
