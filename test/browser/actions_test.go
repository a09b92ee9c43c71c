//go:build browser

package browser_test

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/queue"
)

// The host's auth: a session cookie set by /login, required by every
// request to the dashboard, page and actions alike.
func requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err != nil || c.Value != "ana-session" {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// An operator signs in, pauses and resumes a job, retries a selected
// dead letter, runs a delayed item now and purges all dead letters, by
// clicking the page's buttons; each shows in Redis. A page on a sibling
// origin, which the session cookie reaches, posts a form with a valid
// token and is refused: nothing changes.
func TestBrowserDashboardActions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rdb := redistest.Start(t).Client(t)
	prefix := redistest.Prefix(t)
	in, err := inspect.New(rdb, inspect.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(rdb, "mail", queue.Config{Prefix: prefix, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Write(ctx, rdb, prefix, []registry.Job{{Name: "nightly", BudgetMS: 50, EveryMS: 60_000, RegisteredMS: time.Now().UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, p := range []string{`<img src=x onerror="window.pwned=1">`, `{"to":"bob"}`} {
		if _, err := q.Enqueue(ctx, []byte(p)); err != nil {
			t.Fatal(err)
		}
		items, err := q.Claim(ctx, 1)
		if err != nil || len(items) != 1 {
			t.Fatalf("Claim = %v, %v", items, err)
		}
		if err := q.Nack(ctx, items[0], errors.New("smtp refused")); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, items[0].ID)
	}
	delayed, _, err := q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	key := []byte("browser-test-key-of-32-bytes-or-more")
	d, err := dashboard.New(fixedSource{}, dashboard.WithTitle("ops"),
		dashboard.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		dashboard.WithActions(in, key, func(r *http.Request) string { return "ana" }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	mux := http.NewServeMux()
	mux.Handle("/debug/worksteal", requireSession(d))
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "ana-session", Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/debug/worksteal", http.StatusSeeOther)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	depth := func() queue.Depth {
		t.Helper()
		dp, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return dp
	}
	paused := func() bool {
		t.Helper()
		j, err := in.Job(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		return j.Lock.Paused
	}
	tab := browser(t)
	// waitDone waits for the page the action redirected to to say text;
	// reads that meet the navigation fail, and are tried again.
	waitDone := func(what, text string) {
		t.Helper()
		var got string
		var err error
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			got, err = chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('done')?.textContent ?? ''`))
			if err == nil && got == text {
				return
			}
		}
		t.Fatalf("%s: the page never said %q (last %q, %v)", what, text, got, err)
	}

	if err := chromedp.Do(tab,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#actions tr[data-job="nightly"] button[value="pause"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`document.addEventListener('securitypolicyviolation', () => { window.cspViolations = (window.cspViolations || 0) + 1; });`)(ctx, tg)
			return err
		}),
		chromedp.SetValue(`#actions tr[data-job="nightly"] input[name="for"]`, "5m"),
		chromedp.Click(`#actions tr[data-job="nightly"] button[value="pause"]`),
	); err != nil {
		t.Fatalf("pausing from the page: %v", err)
	}
	waitDone("pause", "Job paused fleet-wide.")
	if !paused() {
		t.Fatal("the job is not paused in Redis after the click")
	}
	if err := chromedp.Do(tab, chromedp.Click(`#actions tr[data-job="nightly"] button[value="resume"]`)); err != nil {
		t.Fatal(err)
	}
	waitDone("resume", "Job resumed fleet-wide.")
	if paused() {
		t.Fatal("the job is still paused after Resume")
	}

	// The queue's dead letters: the payload shows as text, never as markup.
	if err := chromedp.Do(tab,
		chromedp.Click(`#actions tr[data-queue="mail"] a`),
		chromedp.WaitVisible(`#queue tr[data-id="`+dead[0]+`"]`),
	); err != nil {
		t.Fatalf("opening the queue: %v", err)
	}
	shown, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`[document.querySelector('#queue tr[data-id="`+dead[0]+`"] td.payload code').textContent,
		document.querySelector('#queue tr[data-id="`+dead[0]+`"] td.cause').textContent, window.pwned === undefined,
		document.querySelectorAll('#queue img').length]`))
	if err != nil {
		t.Fatal(err)
	}
	if shown[0] != `<img src=x onerror="window.pwned=1">` || shown[1] != "smtp refused" || shown[2] != true || shown[3] != float64(0) {
		t.Errorf("payload, cause, not pwned, images = %v", shown)
	}
	// WORKSTEAL_ACTIONS_PNG=/tmp/actions.png keeps a screenshot of the
	// queue's page.
	if path := os.Getenv("WORKSTEAL_ACTIONS_PNG"); path != "" {
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(tab,
		chromedp.Click(`#queue input[type="checkbox"][value="`+dead[0]+`"]`),
		chromedp.Click(`#dead-bulk button[value="retry"]`),
	); err != nil {
		t.Fatal(err)
	}
	waitDone("retry selected", "1 dead letters sent back to pending.")
	if dp := depth(); dp.Dead != 1 || dp.Pending != 1 {
		t.Fatalf("after retrying the selected, depth = %+v; want 1 dead, 1 pending", dp)
	}
	if err := chromedp.Do(tab, chromedp.Click(`#queue tr[data-id="`+delayed+`"] button[value="run"]`)); err != nil {
		t.Fatal(err)
	}
	waitDone("run now", "1 delayed items made pending now.")
	if dp := depth(); dp.Delayed != 0 || dp.Pending != 2 {
		t.Fatalf("after run now, depth = %+v; want 0 delayed, 2 pending", dp)
	}
	// Purge all: the browser will not submit it unconfirmed.
	if err := chromedp.Do(tab, chromedp.Click(`#dead-all button[value="purge-all"]`)); err != nil {
		t.Fatal(err)
	}
	if dp := depth(); dp.Dead != 1 {
		t.Fatalf("an unconfirmed purge-all changed the depth: %+v", dp)
	}
	if err := chromedp.Do(tab,
		chromedp.Click(`#dead-all input[name="confirm"]`),
		chromedp.Click(`#dead-all button[value="purge-all"]`),
	); err != nil {
		t.Fatal(err)
	}
	waitDone("purge all", "1 dead letters purged.")
	if dp := depth(); dp.Dead != 0 {
		t.Fatalf("after purge-all, depth = %+v; want no dead letter", dp)
	}
	violations, err := chromedp.Run(tab, chromedp.Evaluate[float64](`window.cspViolations || 0`))
	if err != nil || violations != 0 {
		t.Errorf("CSP violations = %v, %v; want 0", violations, err)
	}

	// The attack: a page on a sibling origin (same host, another port:
	// same-site, so the session cookie goes along) holding a valid token
	// of the operator's, as if it had leaked, posts a form to pause the
	// job. The origin check refuses it.
	token, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('#actions input[name="token"]').value`))
	if err != nil || token == "" {
		t.Fatalf("the page's token: %q, %v", token, err)
	}
	attack := template.Must(template.New("").Parse(`<!doctype html><form method="post" action="{{.Action}}">
<input name="token" value="{{.Token}}"><input name="action" value="pause"><input name="job" value="nightly"><input name="for" value="1h">
</form><script>document.forms[0].submit()</script>`))
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = attack.Execute(w, map[string]string{"Action": srv.URL + "/debug/worksteal", "Token": token})
	}))
	t.Cleanup(evil.Close)
	if err := chromedp.Do(tab, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(tab, chromedp.Poll[string](`location.href.startsWith(`+fmt.Sprintf("%q", srv.URL)+`) && document.body && document.body.innerText`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the forged form never reached the dashboard: %v", err)
	}
	if !regexp.MustCompile(`(?i)cross-origin`).MatchString(body) {
		t.Errorf("the forged POST's response = %.300q; want the cross-origin refusal", body)
	}
	if paused() {
		t.Error("the forged POST paused the job")
	}
	if !strings.Contains(body, "dashboard:") {
		t.Errorf("the refusal does not come from the dashboard: %.300q", body)
	}
}
