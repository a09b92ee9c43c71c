//go:build browser

package browser_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

const evictionRisk = `allkeys-lru may evict the job locks <b>and</b> queued items when Redis is full: set maxmemory-policy noeviction`

// riskySource is a dashboard.Source on a Redis whose eviction policy is a
// risk until safe is set: a paced job whose draws mostly skip, held
// elsewhere, a few held back here because the process was busy, and
// slices its pace timer started; an automatic job still learning its
// fleet; one that learnt it.
type riskySource struct{ safe atomic.Bool }

func (s *riskySource) Stats() recruiter.Stats {
	st := recruiter.Stats{
		EvictionPolicy: "allkeys-lru", EvictionRisk: evictionRisk,
		Jobs: []recruiter.JobStats{{
			Name: "tidy", Rate: 0.05, Every: 10 * time.Second, Budget: 50 * time.Millisecond,
			Drawn: 498, Timed: 3, Ran: 7, SkippedLocked: 30, SkippedCooldown: 450, SkippedPaused: 0, SkippedGate: 14, Pressured: 9,
		}, {
			Name: "drain", Automatic: true, Rate: 0.5, Every: time.Minute, Budget: 200 * time.Millisecond, Drawn: 40, Ran: 2, SkippedCooldown: 38,
		}, {
			Name: "evict", Automatic: true, Rate: 0.02, Fleet: 24, Every: 5 * time.Second, Budget: 50 * time.Millisecond, Drawn: 12, Ran: 1, SkippedLocked: 11,
		}},
	}
	if s.safe.Load() {
		st.EvictionPolicy, st.EvictionRisk = "noeviction", ""
	}
	return st
}

// The page explains its numbers where they stand: the eviction risk is a
// banner at the top, its sentence as text, gone with the risk at the
// next refresh; the skipped draws are split under one header that spans
// both columns; automatic pace shows the fleet it spans.
func TestBrowserDashboardExplainsItsNumbers(t *testing.T) {
	src := &riskySource{}
	d, err := dashboard.New(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)

	tab := browser(t)
	if err := chromedp.Do(tab,
		chromedp.Navigate(srv.URL),
		chromedp.WaitVisible(`tr[data-job="tidy"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`window.sameDocument = true;
				document.addEventListener('securitypolicyviolation', e => { window.cspViolations = (window.cspViolations || 0) + 1; });`)(ctx, tg)
			return err
		}),
	); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}

	banner, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`(() => {
		const b = document.getElementById('eviction-risk'), jobs = document.querySelector('table.jobs');
		return [b.textContent, b.offsetHeight > 0 && getComputedStyle(b).display !== 'none',
			b.getBoundingClientRect().bottom <= document.querySelector('header.top').getBoundingClientRect().top,
			b.querySelector('b') === null, document.getElementById('eviction-policy').textContent,
			getComputedStyle(document.querySelector('.stale-banner')).display];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	wantBanner := "Redis may evict worksteal's keys · maxmemory-policy allkeys-lru · " + evictionRisk
	if banner[0] != wantBanner || banner[1] != true || banner[2] != true || banner[3] != true ||
		banner[4] != "Redis maxmemory-policy allkeys-lru" || banner[5] != "none" {
		t.Errorf("banner text, visible, above the header, its markup as text, policy, stale banner's display = %q; want %q, true, true, true, the policy, none",
			banner, wantBanner)
	}

	// The Skipped header spans its two columns exactly, above the row's
	// cells: the split stands where the number used to.
	if err := chromedp.Do(tab, chromedp.Click(`details.pacer > summary`)); err != nil {
		t.Fatal(err)
	}
	cells, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`(() => {
		const r = s => document.querySelector(s).getBoundingClientRect();
		const g = r('th.group'), e = r('tr[data-pacer="tidy"] td.elsewhere'), h = r('tr[data-pacer="tidy"] td.here');
		const row = document.querySelector('tr[data-pacer="tidy"]');
		return [Math.abs(g.left - e.left) < 1 && Math.abs(g.right - h.right) < 1 && g.bottom <= e.top,
			row.querySelector('td.elsewhere').textContent, row.querySelector('td.here').innerText.replace(/\s+/g, ' '),
			row.querySelector('td.attempts').innerText.replace(/\s+/g, ' '),
			document.querySelector('tr[data-job="drain"] td.rate').innerText.replace(/\s+/g, ' '),
			document.querySelector('tr[data-job="evict"] td.rate .fleet').textContent,
			row.querySelector('td.elsewhere').title.includes('locked 30'),
			document.getElementById('jobs-note').offsetHeight > 0];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{true, "480", "14 9 busy", "501 498 drawn · 3 timer", "auto · ≈1 run / 1m fleet-wide · size: learning", "fleet-wide · ≈24 processes", true, true}
	for i := range want {
		if cells[i] != want[i] {
			t.Errorf("header over its columns, held by the fleet, held back here, attempts, drain's pace, evict's fleet, title, legend = %q; want %q", cells, want)
			break
		}
	}

	// The risk is gone: the page's own refresh drops the banner and keeps
	// the policy, discreetly.
	src.safe.Store(true)
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](
		`window.sameDocument && !document.getElementById('eviction-risk') && document.getElementById('eviction-policy')?.textContent === 'Redis maxmemory-policy noeviction'`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the banner outlived the risk, or the page reloaded: %v", err)
	}
	if v, err := chromedp.Run(tab, chromedp.Evaluate[float64](`window.cspViolations || 0`)); err != nil || v != 0 {
		t.Errorf("%v CSP violations (%v)", v, err)
	}
}
