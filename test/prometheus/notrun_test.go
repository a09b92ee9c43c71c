//go:build prometheus

package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// every is the stalled job's interval: the rule fires past three of them.
const every = time.Second

// fleetProcess is one process of the test's fleet: a recruiter whose
// metrics a Prometheus exporter serves over HTTP.
type fleetProcess struct {
	rec  *recruiter.Recruiter
	addr string // host:port of its /metrics
}

// startProcess makes a recruiter on srv with its own meter provider,
// registers job with cfg, and serves its metrics.
func startProcess(t *testing.T, srv *redistest.Server, prefix string, job recruiter.Job, cfg recruiter.JobConfig) *fleetProcess {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	rdb := srv.Client(t)
	rec, err := recruiter.New(rdb, recruiter.Config{
		Prefix:        prefix,
		MeterProvider: mp,
		Pressure:      -1, // the test's machine is busy: its slices must not wait for it
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Register(job, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		metrics.Close()
		_ = mp.Shutdown(ctx)
	})
	return &fleetProcess{rec: rec, addr: strings.TrimPrefix(metrics.URL, "http://")}
}

// forHolds matches the rules' hold times, which the live test shortens.
var forHolds = regexp.MustCompile(`(?m)^(\s+for:\s*)\S+\s*$`)

// TestNotRunAlertFiresAndClears: two processes share job "stall" (Every
// 1s), which no request drives: their pace timers run it. Once one of
// them is stuck in a slice, holding the job's lock, the other's visits
// find it locked, no slice succeeds anywhere, and WorkstealJobNotRun
// fires after three intervals; once the stuck slice returns, the job runs
// again and the alert clears. The rules are the shipped ones, with every
// hold ("for:", 5m for this alert, which promtool's tests check) cut to
// 1s so that the test takes seconds.
func TestNotRunAlertFiresAndClears(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)

	var healthy atomic.Int64 // slices of the healthy process
	a := startProcess(t, srv, prefix, recruiter.Func("stall", func(context.Context) (recruiter.Report, error) {
		healthy.Add(1)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Every: every})
	var (
		stall   atomic.Bool // set: process b's next slice gets stuck
		held    = make(chan struct{})
		release = make(chan struct{})
		once    sync.Once
	)
	b := startProcess(t, srv, prefix, recruiter.Func("stall", func(context.Context) (recruiter.Report, error) {
		if stall.Load() {
			once.Do(func() {
				close(held)
				<-release // stuck: deaf to its context, as a hung call would be
			})
		}
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Every: every})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "worksteal-rules.yml")
	if n := len(forHolds.FindAll(rules, -1)); n != 5 {
		t.Fatalf("%d holds (for:) in %s, want 5", n, rulesFile)
	}
	if err := os.WriteFile(short, forHolds.ReplaceAll(rules, []byte("${1}1s")), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, []string{a.addr, b.addr}, short)

	notRun := func(ctx context.Context) (*alert, error) {
		as, err := prom.alerts(ctx)
		if err != nil {
			return nil, err
		}
		for _, al := range as {
			if al.Labels["alertname"] == "WorkstealJobNotRun" && al.Labels["worksteal_job"] == "stall" {
				return &al, nil
			}
		}
		return nil, nil
	}
	eventually(t, time.Minute, "the job runs and Prometheus sees it, no alert", func(ctx context.Context) error {
		got, err := prom.queryRange(ctx, `max by (worksteal_job) (worksteal_job_last_success_seconds{worksteal_job="stall"})`, 5*time.Second)
		if err != nil || len(got) == 0 {
			return fmt.Errorf("no last success of stall yet (%v)", err)
		}
		if al, err := notRun(ctx); err != nil || al != nil {
			return fmt.Errorf("alert %+v (%v), want none", al, err)
		}
		return nil
	})

	stall.Store(true)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("process b did not take the job within a minute")
	}
	stuck := time.Now()
	skippedBefore := jobStats(a.rec).SkippedLocked
	ranBefore := healthy.Load()
	eventually(t, time.Minute, "WorkstealJobNotRun fires for stall", func(ctx context.Context) error {
		al, err := notRun(ctx)
		if err != nil {
			return err
		}
		if al == nil || al.State != "firing" {
			return fmt.Errorf("alert %+v, want firing", al)
		}
		since, err := strconv.ParseFloat(al.Value, 64)
		if err != nil || since <= 3*every.Seconds() {
			t.Errorf("alert value %q: want the seconds since the last success, over 3 intervals", al.Value)
		}
		return nil
	})
	if n := healthy.Load() - ranBefore; n != 0 {
		t.Errorf("process a ran %d slices while b was stuck, want none: b held the lock", n)
	}
	if js := jobStats(a.rec); js.SkippedLocked == skippedBefore {
		t.Errorf("process a's visits found the lock free (%+v): want them skipped, locked", js)
	}
	t.Logf("fired %v after the slice got stuck", time.Since(stuck).Round(100*time.Millisecond))

	close(release)
	cleared := time.Now()
	eventually(t, time.Minute, "WorkstealJobNotRun clears once the job runs again", func(ctx context.Context) error {
		al, err := notRun(ctx)
		if err != nil {
			return err
		}
		if al != nil {
			return fmt.Errorf("alert %+v, want none", al)
		}
		return nil
	})
	t.Logf("cleared %v after the stuck slice returned", time.Since(cleared).Round(100*time.Millisecond))
}

func jobStats(rec *recruiter.Recruiter) recruiter.JobStats {
	for _, js := range rec.Stats().Jobs {
		if js.Name == "stall" {
			return js
		}
	}
	panic(errors.New("no job stall"))
}
