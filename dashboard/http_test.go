package dashboard_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

const traceA = "4bf92f3577b34da6a3ce929d0e0e4736"

// busySource is a source with two jobs and recent recruitments of every
// kind, one of whose errors holds markup: tidy-stale has a fixed rate, a
// pause that ended a minute before now, and draws held back because the
// process was busy; drain is paced automatically over a fleet of about 12
// processes, paused for 90 s after now, and its pace timer started 3 of
// its slices.
func busySource(now time.Time) *fakeSource {
	last := now.Add(-3 * time.Second)
	return &fakeSource{stats: recruiter.Stats{
		InFlight: 2,
		Jobs: []recruiter.JobStats{{
			Name: "tidy-stale", Rate: 0.05, Budget: 50 * time.Millisecond, Every: 10 * time.Second,
			PausedUntil: now.Add(-time.Minute),
			Drawn:       1234, Ran: 321, SkippedLocked: 7, SkippedCooldown: 800, SkippedPaused: 3, SkippedGate: 90, Pressured: 12,
			Errors: 4, Timeouts: 2, Panics: 1, Slices: 328, Items: 98765,
			LastRun: last, SliceP50: 1500 * time.Microsecond, SliceP99: 42 * time.Millisecond, SliceMax: 48 * time.Millisecond,
		}, {
			Name: "drain", Automatic: true, Fleet: 11.6, Rate: 0.5, Budget: 200 * time.Millisecond, Every: time.Minute,
			PausedUntil: now.Add(90 * time.Second),
			Drawn:       17, Timed: 3, Ran: 20, Slices: 20, Items: 170,
		}},
		Recent: []recruiter.Recruitment{
			{End: last, Job: "tidy-stale", Outcome: recruiter.OutcomeRan, Items: 25, More: true, Duration: 12 * time.Millisecond, TraceID: traceA},
			{End: last.Add(-time.Second), Job: "tidy-stale", Outcome: recruiter.OutcomeError, Duration: time.Millisecond,
				Error: `queue: bad value <script>alert("x")</script>`},
			{End: last.Add(-2 * time.Second), Job: "drain", Outcome: recruiter.OutcomeSkippedCooldown},
			{End: last.Add(-3 * time.Second), Job: "drain", Outcome: recruiter.OutcomeTimeout, Duration: 210 * time.Millisecond, Error: "context deadline exceeded"},
			{End: last.Add(-4 * time.Second), Job: "drain", Outcome: recruiter.OutcomeSkippedPaused},
		},
	}}
}

// get serves one request and returns the recorder.
func get(t *testing.T, h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func TestDashboardJSONDocument(t *testing.T) {
	t.Parallel()
	src := busySource(time.Now())
	depth := 0.0
	d := manual(t, src, dashboard.WithTitle("catalog"), dashboard.WithTraceURL("http://jaeger:16686/trace/%s"),
		dashboard.WithGauge("queue depth", func(context.Context) (float64, error) { depth += 5; return depth, nil }))
	d.SampleAt(t0)
	src.mu.Lock()
	src.stats.Jobs[1].Items = 270
	src.mu.Unlock()
	d.SampleAt(t0.Add(4 * time.Second))

	doc := getJSON(t, d)
	if doc.Title != "catalog" || doc.InFlight != 2 || doc.BreakerOpen || time.Since(doc.Now) > time.Hour {
		t.Errorf("header: title %q, in flight %d, breaker %v, now %v", doc.Title, doc.InFlight, doc.BreakerOpen, doc.Now)
	}
	if len(doc.Jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(doc.Jobs))
	}
	j := doc.Jobs[0]
	if j.Name != "tidy-stale" || j.Rate != 0.05 || j.Automatic || !j.PausedUntil.IsZero() || j.EveryMS != 10000 || j.BudgetMS != 50 ||
		j.Drawn != 1234 || j.Ran != 321 || j.Errors != 4 || j.Timeouts != 2 || j.Panics != 1 || j.Slices != 328 || j.Items != 98765 ||
		j.SliceP50MS != 1.5 || j.SliceP99MS != 42 || j.SliceMaxMS != 48 {
		t.Errorf("job 0 = %+v", j)
	}
	if j.Skipped != (dashboard.DocumentSkipped{Total: 900, Elsewhere: 810, Locked: 7, Cooldown: 800, Paused: 3, Gate: 90, Pressured: 12}) || j.Timed != 0 || j.Fleet != 0 {
		t.Errorf("skipped = %+v, timed %d, fleet %v; want 810 held elsewhere, 90 here of which 12 busy, no timer, no fleet", j.Skipped, j.Timed, j.Fleet)
	}
	if d := doc.Jobs[1]; d.Timed != 3 || d.Ran != 20 || d.Drawn != 17 || d.Fleet != 11.6 {
		t.Errorf("drain: timed %d, ran %d, drawn %d, fleet %v; want 3, 20, 17, 11.6", d.Timed, d.Ran, d.Drawn, d.Fleet)
	}
	if j.LastRun == nil || !j.LastRun.Equal(src.stats.Jobs[0].LastRun.Truncate(0)) {
		t.Errorf("last run %v, want %v", j.LastRun, src.stats.Jobs[0].LastRun)
	}
	if d := doc.Jobs[1]; d.LastRun != nil || d.ItemsPerSecond == nil || *d.ItemsPerSecond != 25 {
		t.Errorf("drain: last run %v (want null), rate %v (want 25)", d.LastRun, deref(d.ItemsPerSecond))
	}
	if d := doc.Jobs[1]; !d.Automatic || d.Rate != 0.5 || !d.PausedUntil.Equal(src.stats.Jobs[1].PausedUntil.Truncate(0)) {
		t.Errorf("drain: automatic %v, rate %v, paused until %v; want automatic, 0.5, until %v",
			d.Automatic, d.Rate, d.PausedUntil, src.stats.Jobs[1].PausedUntil)
	}
	if len(doc.Samples) != 2 || *doc.Samples[0].Gauges["queue depth"] != 5 || *doc.Samples[1].Gauges["queue depth"] != 10 {
		t.Errorf("samples %+v", doc.Samples)
	}
	for i, s := range doc.Samples { // the first sample has no items/s, but a rate
		if len(s.Rate) != 2 || s.Rate["tidy-stale"] != 0.05 || s.Rate["drain"] != 0.5 {
			t.Errorf("sample %d: rate %v, want tidy-stale 0.05 and drain 0.5", i, s.Rate)
		}
	}
	if len(doc.Recent) != 5 {
		t.Fatalf("%d recent, want 5", len(doc.Recent))
	}
	r := doc.Recent[0]
	if r.Job != "tidy-stale" || r.Outcome != recruiter.OutcomeRan || r.Items != 25 || !r.More || r.DurationMS != 12 ||
		r.TraceID != traceA || r.TraceURL != "http://jaeger:16686/trace/"+traceA {
		t.Errorf("recent 0 = %+v", r)
	}
	if e := doc.Recent[1]; e.Outcome != recruiter.OutcomeError || !strings.Contains(e.Error, "<script>") || e.TraceURL != "" {
		t.Errorf("recent 1 = %+v", e)
	}

	// The names are part of the contract: check them on the wire.
	raw := get(t, d, http.MethodGet, "/?format=json").Body.String()
	for _, key := range []string{`"breaker_open": false`, `"in_flight": 2`, `"every_ms": 10000`, `"slice_p99_ms": 42`,
		`"items_per_second": {`, `"skipped": {`, `"last_run": null`, `"trace_url": "http://jaeger:16686/trace/` + traceA,
		`"automatic": true`, `"automatic": false`, `"paused": 3`, `"rate": {`, `"outcome": "skipped_paused"`,
		`"elsewhere": 810`, `"pressured": 12`, `"timed": 3`, `"fleet": 11.6`, `"eviction_policy": ""`, `"eviction_risk": ""`} {
		if !strings.Contains(raw, key) {
			t.Errorf("the JSON lacks %s:\n%s", key, raw)
		}
	}
	// Only drain is paused now: tidy-stale's ended pause is left out.
	if n := strings.Count(raw, `"paused_until": "`); n != 1 {
		t.Errorf("the JSON holds %d paused_until, want 1 (drain's):\n%s", n, raw)
	}
}

func TestDashboardNegotiation(t *testing.T) {
	t.Parallel()
	d := manual(t, busySource(time.Now()))
	for _, tc := range []struct {
		target, accept, want string
	}{
		{"/", browserAccept, "text/html"},
		{"/", "", "text/html"},
		{"/", "application/json", "application/json"},
		{"/", "application/json, text/html", "text/html"},
		{"/?format=json", browserAccept, "application/json"},
		{"/?format=html", "application/json", "text/html"},
	} {
		rec := get(t, d, http.MethodGet, tc.target, "Accept", tc.accept)
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.want) || rec.Code != http.StatusOK {
			t.Errorf("GET %s (Accept %q): %d %s, want %s", tc.target, tc.accept, rec.Code, ct, tc.want)
		}
	}
}

func TestDashboardMethods(t *testing.T) {
	t.Parallel()
	d := manual(t, busySource(time.Now()))
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := get(t, d, m, "/")
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q; want 405 and GET, HEAD", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	head := get(t, d, http.MethodHead, "/")
	n, _ := strconv.Atoi(head.Header().Get("Content-Length"))
	if head.Code != http.StatusOK || head.Body.Len() != 0 || n < 1000 {
		t.Errorf("HEAD: %d, %d body bytes, Content-Length %d; want 200, none, the page's length", head.Code, head.Body.Len(), n)
	}
}

func TestDashboardHTML(t *testing.T) {
	t.Parallel()
	src := busySource(t0.Add(3 * time.Second))
	d := manual(t, src, dashboard.WithTitle("catalog <prod>"), dashboard.WithTraceURL("http://jaeger:16686/trace/%s"))
	d.SetClock(func() time.Time { return t0.Add(3 * time.Second) })
	shares := []float64{0.1, 0.2, 0.4, 0.5}              // drain's automatic pace rises
	for i, items := range []uint64{170, 180, 200, 240} { // drain: 10, 20, then 40 items/s
		src.setItems("drain", items)
		src.mu.Lock()
		src.stats.Jobs[1].Rate = shares[i]
		src.mu.Unlock()
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	rec := get(t, d, http.MethodGet, "/", "Accept", browserAccept)
	page := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("GET: %d", rec.Code)
	}

	row := func(job string) string {
		m := jobRows(page, job)
		if m == "" {
			t.Fatalf("no row for %s in:\n%s", job, page)
		}
		return m
	}
	tidy := row("tidy-stale")
	for _, cell := range []string{
		`"num rate">5%<`, `"num every">10s<`, `"num budget">50ms<`, `>1,234<span class="aside drawn">1,234 drawn</span>`, `"num ran">321<`,
		`"num skipped elsewhere" title="Redis answered that the fleet holds the job: locked 7 (another process held the job&#39;s lock) · cooldown 800 (the fleet ran it within its Every) · paused 3 (paused fleet-wide)">810<`,
		`"num skipped here" title="attempts held back in this process before any Redis call: `, `(12 of them: the process was busy`,
		`>90<span class="aside busy">12 busy</span></td>`, `"num errors bad">4<`, `"num timeouts warn">2<`, `"num panics bad">1<`,
		// Its newest run succeeded: on time, its failures counted, flagged.
		`<tr data-job="tidy-stale" data-state="on_time">`, `<span class="state-pill s-on_time" title="a run seen within 3 × Every = 30s">on time</span></td>`,
		`<td class="num failed bad" title="errors 4 (of the slice, or Redis failing its lock) · timeouts 2 (past the budget) · panics 1 · hung 0`, `>7</td>`,
		`<td class="num next-due" title="the last run seen`, `>in 7s</td>`,
		`"num items strong">98,765<`, `<td class="num slice" title="max 48ms"><span class="p50">1.5ms</span> · <span class="p99">42ms</span></td>`, `>3s ago<`,
	} {
		if !strings.Contains(tidy, cell) {
			t.Errorf("the tidy-stale row lacks %s:\n%s", cell, tidy)
		}
	}
	// A fixed rate has no history; a pause that ended shows nothing.
	if strings.Contains(tidy, "spark") || strings.Contains(tidy, "paused ·") || strings.Contains(tidy, "auto") {
		t.Errorf("the tidy-stale row shows automatic pace or a pause:\n%s", tidy)
	}
	drain := row("drain")
	for _, cell := range []string{`"num items strong">240<`, `"num per-second">40<`, `"num errors">0<`, `>never<`, `"num every">1m<`,
		`<tr data-job="drain" data-state="paused" class="paused">`, `class="pill warn paused"`, `>paused · 1m30s left<`,
		`<span class="state-pill s-paused" title="paused fleet-wide until 2026-03-14T15:10:59Z">paused</span></td>`,
		`title="paused fleet-wide until ` + t0.Add(93*time.Second).Local().Format(time.RFC3339) + `"`,
		`"num rate auto"`, `>auto · ≈1 run / 1m<svg class="spark c1"`, `<span class="aside fleet">fleet-wide · ≈12 processes</span></td>`,
		`This process learnt a fleet of ≈12 processes`, `(50% now)`,
		`"num attempts" title="17 drawn by requests&#39; rolls, 3 started by this process&#39;s pace timer`, `>20<span class="aside drawn">17 drawn · 3 timer</span></td>`,
		`"num ran">20<`} {
		if !strings.Contains(drain, cell) {
			t.Errorf("the drain row lacks %s:\n%s", cell, drain)
		}
	}
	// Its rate's sparkline: a point per sample, the first too (a rate
	// needs no previous sample), left to right, higher for a higher rate.
	sm := regexp.MustCompile(`<svg class="spark c1"[^>]*><path d="([^"]*)"`).FindStringSubmatch(drain)
	if sm == nil {
		t.Fatalf("no sparkline for drain:\n%s", drain)
	}
	spark := parsePath(t, sm[1])
	if len(spark) != 4 || strings.Count(sm[1], "M") != 1 {
		t.Fatalf("drain's sparkline %q: want one run of 4 points", sm[1])
	}
	for i := 1; i < len(spark); i++ {
		if !(spark[i-1][0] < spark[i][0] && spark[i-1][1] > spark[i][1]) {
			t.Errorf("sparkline points %v: want x rising with time and y rising (SVG y falling) with the rate", spark)
		}
	}
	if last := spark[3]; last[0] != 64 || last[1] != 1 {
		t.Errorf("the latest point %v, want at the right edge and the top (64, 1)", last)
	}
	// The browser test counts the charts: a sparkline is not one.
	if n := strings.Count(page, `<svg class="chart"`); n != 1 {
		t.Errorf("%d charts, want 1 (items per second)", n)
	}

	// The chart: drain's line has one point per sample with a rate (not the
	// first), left to right, higher for a higher rate.
	m := regexp.MustCompile(`<path class="series" data-series="drain" d="([^"]*)"`).FindStringSubmatch(page)
	if !strings.Contains(page, "<svg") || m == nil {
		t.Fatalf("no SVG line for drain in:\n%s", page)
	}
	pts := parsePath(t, m[1])
	if len(pts) != 3 || strings.Count(m[1], "M") != 1 {
		t.Fatalf("drain's path %q: want one run of 3 points", m[1])
	}
	if !(pts[0][0] < pts[1][0] && pts[1][0] < pts[2][0]) || !(pts[0][1] > pts[1][1] && pts[1][1] > pts[2][1]) {
		t.Errorf("drain's points %v: want x rising with time and y rising (SVG y falling) with 10, 20, 40 items/s", pts)
	}
	// 20 items/s is halfway between the baseline (0) and 40, which the
	// axis's top reaches (a nice number: 40 = 4 × 10).
	if want := (pts[2][1] + baseline(t, page)) / 2; abs(pts[1][1]-want) > 0.2 {
		t.Errorf("y of 20 items/s = %v, want %v: halfway between 0/s and 40/s", pts[1][1], want)
	}

	for _, want := range []string{
		"<title>catalog &lt;prod&gt; · stolen work</title>", `breaker closed`, `<b>2</b> slices in flight`,
		`<span class="badge o-ran">ran</span>`, `<span class="badge o-error">error</span>`,
		`<span class="badge o-skipped">skipped: cooldown</span>`, `<span class="badge o-timeout">timeout</span>`,
		`<span class="badge o-skipped">skipped: paused</span>`,
		`<a href="http://jaeger:16686/trace/` + traceA + `"`, `25<span class="more"`, `12ms`, `210ms`,
		`queue: bad value &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`, `href="?format=json"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, `<script>alert`) || strings.Contains(page, "<prod>") {
		t.Error("the page holds unescaped markup from an error or the title")
	}
	if regexp.MustCompile(`(href|src|action)="/`).MatchString(page) {
		t.Error("the page holds an absolute link; they must be relative, for any mount point")
	}
}

func TestDashboardSecurityHeaders(t *testing.T) {
	t.Parallel()
	d := manual(t, busySource(time.Now()))
	rec := get(t, d, http.MethodGet, "/", "Accept", browserAccept)
	h := rec.Header()
	if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("Cache-Control %q, X-Content-Type-Options %q", h.Get("Cache-Control"), h.Get("X-Content-Type-Options"))
	}
	csp := h.Get("Content-Security-Policy")
	page := rec.Body.String()
	script := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(page, -1)
	if len(script) != 1 || len(style) != 1 {
		t.Fatalf("%d scripts and %d styles, want one each", len(script), len(style))
	}
	for _, want := range []string{
		"default-src 'none'", "script-src " + dashboard.CSPHash(script[0][1]), "style-src " + dashboard.CSPHash(style[0][1]),
		"connect-src 'self'", "frame-ancestors 'none'",
	} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(page, "style=") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Errorf("CSP %q or the page relies on unsafe inline code", csp)
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("the page loads something from another origin")
	}
	js := get(t, d, http.MethodGet, "/?format=json")
	if js.Header().Get("Cache-Control") != "no-store" || js.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("JSON headers %v", js.Header())
	}
}

func TestDashboardUnderAnyPath(t *testing.T) {
	t.Parallel()
	d := manual(t, busySource(time.Now()))
	mux := http.NewServeMux()
	mux.Handle("/debug/worksteal", d)
	mux.Handle("/ops/", http.StripPrefix("/ops", d))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/debug/worksteal", "/debug/worksteal?format=json", "/ops/steal/"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "tidy-stale") {
			t.Errorf("GET %s: %d, %d bytes", path, res.StatusCode, len(body))
		}
	}
}

func TestDashboardEscapesJobNames(t *testing.T) {
	t.Parallel()
	// The recruiter validates names, but a Source need not be a recruiter.
	src := &fakeSource{}
	src.setItems(`x"><img src=x>`, 1)
	d := manual(t, src)
	d.SampleAt(t0)
	d.SampleAt(t0.Add(time.Second))
	page := get(t, d, http.MethodGet, "/").Body.String()
	if strings.Contains(page, "<img") || !strings.Contains(page, "x&#34;&gt;&lt;img src=x&gt;") {
		t.Errorf("the job name is not escaped:\n%s", page)
	}
}

// parsePath reads the points of an SVG path of M and L commands.
func parsePath(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var pts [][2]float64
	for _, m := range regexp.MustCompile(`[ML]([-\d.]+),([-\d.]+)`).FindAllStringSubmatch(d, -1) {
		x, err1 := strconv.ParseFloat(m[1], 64)
		y, err2 := strconv.ParseFloat(m[2], 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		pts = append(pts, [2]float64{x, y})
	}
	return pts
}

// baseline is the y of the rate chart's 0 tick.
func baseline(t *testing.T, page string) float64 {
	t.Helper()
	m := regexp.MustCompile(`y="([\d.]+)" dx="-8" dy="4" text-anchor="end">0<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no 0 tick on the chart")
	}
	y, _ := strconv.ParseFloat(m[1], 64)
	return y
}

func abs(v float64) float64 { return max(v, -v) }

func TestDashboardEmpty(t *testing.T) {
	t.Parallel()
	d := manual(t, &fakeSource{stats: recruiter.Stats{BreakerOpen: true}})
	rec := get(t, d, http.MethodGet, "/")
	page := rec.Body.String()
	for _, want := range []string{"No job is registered yet.", "Waiting for samples…", "No recruitment yet", "breaker open", `data-samples="0"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the empty page lacks %q", want)
		}
	}
	doc := getJSON(t, d)
	if !doc.BreakerOpen || doc.Jobs == nil || doc.Samples == nil || doc.Recent == nil || doc.Gauges == nil {
		t.Errorf("empty document %+v: want the breaker open and empty lists, not nulls", doc)
	}
}
