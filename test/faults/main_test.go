package faults_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial: thousands of lines in an outage.
	redis.SetLogger(quietLogger{})
	// The crash and pause tests re-execute this binary as worker processes.
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	// The pace test re-executes it as processes that run a paced job.
	if spec := os.Getenv(pacedEnv); spec != "" {
		os.Exit(runPaced(spec))
	}
	goleak.VerifyTestMain(m)
}

// logBuffer collects a recruiter's log for assertions on what it said.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(substr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), substr)
}

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// dialCounter counts the connections a client opens, or tries to: the
// breaker's promise is that this stays bounded while Redis is down.
type dialCounter struct{ atomic.Int64 }

// countedClient is a client for addr with redistest's short timeouts, no
// retries and a dialer that counts its attempts.
func countedClient(t testing.TB, srv *redistest.Server, addr string) (*redis.Client, *dialCounter) {
	t.Helper()
	opts := *srv.Client(t).Options() // redistest's options, defaults applied
	opts.Addr = addr
	// Applied defaults are not idempotent: init turned redistest's -1 (no
	// retries) into 0, which a second init would read as "3 retries".
	opts.MaxRetries = -1
	dials := &dialCounter{}
	var d net.Dialer
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	c := redis.NewClient(&opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, dials
}

// newRecruiter makes a recruiter that is shut down in t.Cleanup (an error
// there fails the test: a slice outlived its budget by seconds).
func newRecruiter(t testing.TB, rdb redis.UniversalClient, cfg recruiter.Config) *recruiter.Recruiter {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = newLogger(io.Discard)
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

func mustRegister(t testing.TB, rec *recruiter.Recruiter, job recruiter.Job, cfg recruiter.JobConfig) {
	t.Helper()
	if err := rec.Register(job, cfg); err != nil {
		t.Fatalf("Register(%s): %v", job.Name(), err)
	}
}

// jobStats returns the named job's counters.
func jobStats(t testing.TB, rec *recruiter.Recruiter, name string) recruiter.JobStats {
	t.Helper()
	for _, js := range rec.Stats().Jobs {
		if js.Name == name {
			return js
		}
	}
	t.Fatalf("no job %q in Stats", name)
	return recruiter.JobStats{}
}

// quietLogger drops go-redis's internal log.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
