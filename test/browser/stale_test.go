//go:build browser

package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

// fixedSource is a dashboard.Source whose stats never change: one job,
// "drain", that has run.
type fixedSource struct{}

func (fixedSource) Stats() recruiter.Stats {
	last := time.Now().Add(-3 * time.Second)
	return recruiter.Stats{
		Jobs: []recruiter.JobStats{{
			Name: "drain", Rate: 0.5, Budget: 200 * time.Millisecond, Drawn: 17, Ran: 17, Slices: 17, Items: 170, LastRun: last,
		}},
		Recent: []recruiter.Recruitment{{End: last, Job: "drain", Outcome: recruiter.OutcomeRan, Items: 10, Duration: 12 * time.Millisecond}},
	}
}

// A server that stops answering must not freeze the page: the refresh
// gives up, marks the page stale, and keeps trying until it answers again.
func TestBrowserDashboardMarksAHungServerStale(t *testing.T) {
	d, err := dashboard.New(fixedSource{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	var hang atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-r.Context().Done(): // the page gave up
			case <-release:
			}
			return
		}
		d.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handlers

	tab := browser(t)
	if err := chromedp.Do(tab,
		chromedp.Navigate(srv.URL),
		chromedp.WaitVisible(`tr[data-job="drain"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`window.sameDocument = true;`)(ctx, tg)
			return err
		}),
	); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	hang.Store(true)
	// A refresh every 2 s, given up after 4 s: stale within about 6 s.
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](`document.body.classList.contains('stale') && window.sameDocument`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page never showed the hung server as stale: %v", err)
	}
	hang.Store(false)
	if _, err := chromedp.Run(tab, chromedp.Poll[chromedp.Void](`!document.body.classList.contains('stale') && window.sameDocument`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page stopped refreshing after the server hung: %v", err)
	}
}
