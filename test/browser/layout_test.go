//go:build browser

package browser_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/queue"
)

// At 1280 × 800, a laptop's screen, the jobs table opens on health: every
// column's header and cells lie inside the viewport, with no horizontal
// scroll, and every job has a state; the pacer's internals stay behind
// their details view, open through the page's refresh once opened.
func TestBrowserDashboardFits1280(t *testing.T) {
	rec, depth := busyRecruiter(t)
	d, err := dashboard.New(rec, dashboard.WithTitle("catalog service"),
		dashboard.WithSampleEvery(250*time.Millisecond), dashboard.WithWindow(time.Minute),
		dashboard.WithGauge("queue depth", depth), dashboard.WithTraceURL("http://localhost:16686/trace/%s"),
		dashboard.WithQueues(simQueue{"thumbnails", depth}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	mux := http.NewServeMux()
	mux.Handle("/debug/worksteal", d)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	tab := browserSized(t, 1280, 800)
	if err := chromedp.Do(tab,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(srv.URL+"/debug/worksteal"),
		chromedp.WaitVisible(`table.jobs tr[data-job="heartbeat"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`window.sameDocument = true;`)(ctx, tg)
			return err
		}),
	); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	// Every job ran here once: its row holds all it will hold.
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](
		`[...document.querySelectorAll('table.jobs tr[data-job] td.last-run')].every(td => td.firstChild.textContent !== 'never')`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatalf("some job never ran: %v", err)
	}

	fit, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`(() => {
		const w = window.innerWidth, out = [];
		const table = document.querySelector('table.jobs');
		const heads = [...table.querySelectorAll('thead th')];
		for (const [i, th] of heads.entries()) {
			const r = th.getBoundingClientRect();
			if (!(r.width > 0 && r.left >= 0 && r.right <= w)) out.push('header ' + th.textContent + ': ' + r.left + '..' + r.right);
		}
		const rows = [...table.querySelectorAll('tbody tr[data-job]')];
		for (const row of rows) {
			const cells = [...row.children];
			if (cells.length !== heads.length) out.push(row.dataset.job + ': ' + cells.length + ' cells, ' + heads.length + ' headers');
			for (const [i, td] of cells.entries()) {
				const r = td.getBoundingClientRect();
				if (!(r.width > 0 && r.left >= 0 && r.right <= w)) out.push(row.dataset.job + ' ' + heads[i]?.textContent + ': ' + r.left + '..' + r.right);
			}
			const state = row.querySelector('td.state .state-pill');
			if (!row.dataset.state || !state || !state.textContent.trim()) out.push(row.dataset.job + ': no state');
		}
		for (const td of document.querySelectorAll('table.queues td')) {
			const r = td.getBoundingClientRect();
			if (!(r.right <= w)) out.push('queue cell ' + td.className + ': ' + r.left + '..' + r.right);
		}
		if (!document.querySelector('table.queues tr[data-queue="thumbnails"] td.pending')) out.push('no queue row');
		return [w, document.scrollingElement.scrollWidth, rows.length, heads.map(th => th.textContent), out,
			document.querySelector('details.pacer').open, document.querySelector('table.pacer').checkVisibility()];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("viewport %v px, page %v px wide, %v jobs, columns %q", fit[0], fit[1], fit[2], fit[3])
	if fit[0] != float64(1280) || fit[1].(float64) > fit[0].(float64) || fit[2] != float64(4) {
		t.Errorf("viewport %v, scroll width %v, %v job rows; want 1280, at most 1280, 4", fit[0], fit[1], fit[2])
	}
	if out := fit[4].([]any); len(out) > 0 {
		t.Errorf("outside the viewport, or without a state:\n%q", out)
	}
	if fit[5] != false || fit[6] != false {
		t.Errorf("the pacer's internals: open %v, visible %v; want closed, hidden", fit[5], fit[6])
	}

	// Opened, the internals show, and stay open through two refreshes.
	if err := chromedp.Do(tab, chromedp.Click(`details.pacer > summary`)); err != nil {
		t.Fatal(err)
	}
	before, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('header .sub time').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](`window.sameDocument && document.querySelector('header .sub time').textContent !== `+jsString(before)+
		` && document.querySelector('details.pacer').open && document.querySelector('tr[data-pacer="tidy-stale"] td.attempts').checkVisibility()`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the pacer's internals did not stay open through the refresh: %v", err)
	}

	// WORKSTEAL_DASHBOARD_PNG=/tmp/dashboard.png keeps a screenshot of
	// the page as it opens, once the chart holds 15 s of samples.
	if path := os.Getenv("WORKSTEAL_DASHBOARD_PNG"); path != "" {
		if err := chromedp.Do(tab, chromedp.Click(`details.pacer > summary`)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](`Number(document.querySelector('svg.chart').dataset.samples) >= 60 && !document.querySelector('details.pacer').open`,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
			t.Fatalf("waiting for samples: %v", err)
		}
		if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 1000)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// simQueue is the busy recruiter's simulated queue, as a dashboard
// QueueSource: its pending items, two dead letters, a wait of a second
// per 100 items.
type simQueue struct {
	name  string
	depth func(context.Context) (float64, error)
}

func (q simQueue) Name() string { return q.name }
func (q simQueue) Depth(ctx context.Context) (queue.Depth, error) {
	n, err := q.depth(ctx)
	return queue.Depth{Pending: int64(n), Leased: 2, Delayed: 5, Dead: 2, OldestPending: time.Duration(n) * 10 * time.Millisecond}, err
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
