//go:build browser

// The browser test drives a real headless Chromium against the dashboard of
// a live recruiter: make test-browser (it installs chromium when missing).

package browser_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium with a fresh profile and no network
// chatter of its own; it is closed at cleanup.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browserSized(t, 1360, 1000)
}

// browserSized is browser with a window of width × height.
func browserSized(t *testing.T, width, height int) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("%s is missing: install it with `apt-get install -y chromium` (make test-browser does)", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(width, height),
	)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancel()
	})
	return tab
}

// liveRecruiter is a recruiter on a throw-away Redis, shut down at cleanup.
func liveRecruiter(t *testing.T, cfg recruiter.Config) *recruiter.Recruiter {
	t.Helper()
	srv := redistest.Start(t)
	tp := sdktrace.NewTracerProvider()
	cfg.Prefix = redistest.Prefix(t)
	cfg.TracerProvider = tp
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rec, err := recruiter.New(srv.Client(t), cfg)
	if err != nil {
		t.Fatalf("recruiter.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		_ = tp.Shutdown(ctx)
	})
	return rec
}

// busyRecruiter is a live recruiter with four jobs, enlisted every few
// milliseconds until cleanup: one drains a simulated queue (its depth is
// the returned gauge), one tidies once a second, one fails now and then,
// one beats on a cron schedule, every second.
func busyRecruiter(t *testing.T) (*recruiter.Recruiter, func(context.Context) (float64, error)) {
	rec := liveRecruiter(t, recruiter.Config{MaxConcurrent: 2})
	var depth, calls atomic.Int64
	depth.Store(400)
	jobs := []struct {
		job recruiter.Job
		cfg recruiter.JobConfig
	}{
		{recruiter.Func("drain-thumbnails", func(context.Context) (recruiter.Report, error) {
			n := min(depth.Load(), 4+calls.Load()%9)
			depth.Add(-n)
			return recruiter.Report{Items: int(n), More: n > 0}, nil
		}), recruiter.JobConfig{Rate: 0.5, Budget: 20 * time.Millisecond}},
		{recruiter.Func("tidy-stale", func(context.Context) (recruiter.Report, error) {
			return recruiter.Report{Items: int(calls.Load() % 4)}, nil
		}), recruiter.JobConfig{Rate: 0.2, Budget: 20 * time.Millisecond, Every: time.Second}},
		{recruiter.Func("evict-sessions", func(context.Context) (recruiter.Report, error) {
			if calls.Add(1)%7 == 0 {
				return recruiter.Report{}, errors.New(`redis: HSCAN "sessions": i/o timeout`)
			}
			return recruiter.Report{Items: 2, More: true}, nil
		}), recruiter.JobConfig{Rate: 0.2, Budget: 20 * time.Millisecond}},
		{recruiter.Func("heartbeat", func(context.Context) (recruiter.Report, error) {
			return recruiter.Report{Items: 1}, nil
		}), recruiter.JobConfig{Schedule: "* * * * * *", Budget: 20 * time.Millisecond}},
	}
	for _, j := range jobs {
		if err := rec.Register(j.job, j.cfg); err != nil {
			t.Fatal(err)
		}
	}
	// The enlisting loop stands for request traffic; it ends before the
	// recruiter's cleanup (cleanups run last-in first-out).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if n%4 == 0 {
					depth.Add(9) // the queue keeps filling
				}
				rec.Enlist(context.Background())
			}
		}
	})
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	return rec, func(context.Context) (float64, error) { return float64(depth.Load()), nil }
}

func TestBrowserDashboardRefreshesLive(t *testing.T) {
	rec, depth := busyRecruiter(t)
	d, err := dashboard.New(rec, dashboard.WithTitle("catalog service"),
		dashboard.WithSampleEvery(250*time.Millisecond), dashboard.WithWindow(time.Minute),
		dashboard.WithGauge("queue depth", depth), dashboard.WithTraceURL("http://localhost:16686/trace/%s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	mux := http.NewServeMux()
	mux.Handle("/debug/worksteal", d)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	tab := browser(t)
	const items = `Number(document.querySelector('tr[data-job="drain-thumbnails"] td.items').textContent.replaceAll(',', ''))`
	if err := chromedp.Do(tab,
		chromedp.Navigate(srv.URL+"/debug/worksteal"),
		chromedp.WaitVisible(`tr[data-job="drain-thumbnails"] td.items`),
		// Marks this document: a reload would lose the marks, the page's
		// own refresh (a swap of its <main>) keeps them.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`window.sameDocument = true;
				document.addEventListener('securitypolicyviolation', e => { window.cspViolations = (window.cspViolations || 0) + 1; });`)(ctx, tg)
			return err
		}),
	); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}

	first, err := chromedp.Run(tab, chromedp.Poll[float64](items+` || false`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		t.Fatalf("the job table never showed items stolen: %v", err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](
		`(document.querySelector('svg.chart path.series[data-series="drain-thumbnails"]')?.getAttribute('d') || '').includes('L')`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("the chart never drew a line for the job: %v", err)
	}
	grown, err := chromedp.Run(tab, chromedp.Poll[float64](`(`+items+` > `+strconv.FormatFloat(first, 'f', -1, 64)+`) && window.sameDocument && `+items,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		t.Fatalf("the items count did not grow past %v through the page's own refresh: %v", first, err)
	}
	t.Logf("items stolen: %v on load, %v after a refresh", first, grown)
	// tidy-stale runs at most once a second: this process, the whole
	// fleet, knows its cooldown and holds most draws of it back itself.
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](
		`Number(document.querySelector('tr[data-pacer="tidy-stale"] td.skipped.here').firstChild.textContent.replaceAll(',', '')) > 0`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("tidy-stale's skips never showed as held back here: %v", err)
	}

	// The scheduled job shows its expression where a rate stands, its
	// next tick, and, once a tick ran here, how late it began.
	const heartbeat = `document.querySelector('tr[data-job="heartbeat"]')`
	beat, err := chromedp.Run(tab, chromedp.Poll[[]any](`(() => {
		const row = `+heartbeat+`, late = row.querySelector('td.last-run .late');
		return late && [row.querySelector('td.rate code').textContent, row.querySelector('td.rate').firstChild.textContent,
			row.querySelector('td.next-due').textContent, row.querySelector('td.next-due').title,
			late.textContent, row.querySelector('td.last-run').firstChild.textContent,
			document.querySelector('tr[data-pacer="heartbeat"] td.every').textContent];
	})()`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		t.Fatalf("the scheduled job never showed a run here and how late it began: %v", err)
	}
	// On a loaded machine a tick may pass unvisited for a moment: "tick due".
	if len(beat) != 7 || beat[0] != "* * * * * *" || beat[1] != "cron · " ||
		!regexp.MustCompile(`^(now|in (<1s|\ds)|tick due (just now|\ds ago))$`).MatchString(fmt.Sprint(beat[2])) ||
		!regexp.MustCompile(`^(the next tick this process visits: |this process was to visit the tick of )`).MatchString(fmt.Sprint(beat[3])) ||
		!regexp.MustCompile(`^(late \d+(\.\d+)?(µs|ms|s)|on time)$`).MatchString(fmt.Sprint(beat[4])) ||
		!regexp.MustCompile(`^(just now|\ds ago)$`).MatchString(fmt.Sprint(beat[5])) || beat[6] != "–" {
		t.Errorf("heartbeat's expression, prefix, next due, its title, late, last run, Every = %q; want * * * * * *, cron · , in …, the next tick …, late …, just now, –", beat)
	}

	state, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`[window.cspViolations || 0, document.body.classList.contains('stale'),
		document.querySelectorAll('table.jobs tr[data-job]').length, document.querySelectorAll('svg.chart').length]`))
	if err != nil {
		t.Fatal(err)
	}
	if state[0] != float64(0) || state[1] != false || state[2] != float64(4) || state[3] != float64(2) {
		t.Errorf("CSP violations, stale, job rows, charts = %v; want 0, false, 4, 2", state)
	}
}
