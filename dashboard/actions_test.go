package dashboard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
	"github.com/worksteal/worksteal/telemetry"
)

var actionKey = []byte("0123456789abcdef0123456789abcdef") // 32 bytes

// opsBundle: a Redis holding a queue "mail" (two dead letters, one
// delayed item, one pending) and a registered job "nightly", and a
// dashboard with actions over it, whose spans and logs are recorded.
type opsBundle struct {
	rdb     *redis.Client
	prefix  string
	in      *inspect.Inspector
	q       *queue.Queue
	d       *dashboard.Dashboard
	spans   *tracetest.SpanRecorder
	logs    *syncBuffer
	dead    []string // ids, oldest first
	delayed string
	pending string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sessionUser is the host's who: the user its auth cookie names.
func sessionUser(r *http.Request) string {
	if c, err := r.Cookie("session"); err == nil {
		return c.Value
	}
	return ""
}

func opsSetup(t *testing.T, opts ...dashboard.Option) *opsBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := &opsBundle{rdb: redistest.Start(t).Client(t), prefix: redistest.Prefix(t),
		spans: tracetest.NewSpanRecorder(), logs: &syncBuffer{}}
	var err error
	if b.in, err = inspect.New(b.rdb, inspect.Config{Prefix: b.prefix}); err != nil {
		t.Fatal(err)
	}
	if b.q, err = queue.New(b.rdb, "mail", queue.Config{Prefix: b.prefix, MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if err := registry.Write(ctx, b.rdb, b.prefix, []registry.Job{{Name: "nightly", BudgetMS: 50, Schedule: "0 3 * * *", RegisteredMS: time.Now().UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{[]byte(`<script>alert("dead")</script>`), bytes.Repeat([]byte("x"), 400)}
	for i, p := range payloads {
		if _, err := b.q.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
		items, err := b.q.Claim(ctx, 1)
		if err != nil || len(items) != 1 {
			t.Fatalf("Claim = %v, %v", items, err)
		}
		if err := b.q.Nack(ctx, items[0], fmt.Errorf("smtp refused <b>%d</b>", i)); err != nil {
			t.Fatal(err)
		}
		b.dead = append(b.dead, items[0].ID)
	}
	if b.delayed, _, err = b.q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if b.pending, err = b.q.Enqueue(ctx, []byte("now")); err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b.spans))
	all := append([]dashboard.Option{
		dashboard.WithActions(b.in, actionKey, sessionUser),
		dashboard.WithLogger(slog.New(slog.NewJSONHandler(b.logs, nil))),
		dashboard.WithTracerProvider(tp),
	}, opts...)
	if b.d, err = dashboard.NewManual(&fakeSource{}, all...); err != nil {
		t.Fatal(err)
	}
	return b
}

// fleet is what an action may change: the queue's depth and the job's
// pause, compared before and after a refused request.
type fleet struct {
	depth  [4]int64 // pending, delayed, dead, leased
	paused bool
}

func (b *opsBundle) fleet(t *testing.T) fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := b.q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, err := b.in.Job(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	return fleet{depth: [4]int64{d.Pending, d.Delayed, d.Dead, d.Leased}, paused: j.Lock.Paused}
}

var tokenRE = regexp.MustCompile(`name="token" value="([^"]+)"`)

// page GETs the page as user and returns it and its action token.
func (b *opsBundle) page(t *testing.T, user, query string) (string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/ops"+query, nil)
	req.AddCookie(&http.Cookie{Name: "session", Value: user})
	rec := httptest.NewRecorder()
	b.d.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET = %d %s", rec.Code, rec.Body)
	}
	m := tokenRE.FindStringSubmatch(rec.Body.String())
	if m == nil {
		return rec.Body.String(), ""
	}
	return rec.Body.String(), m[1]
}

// post POSTs form as user, as a same-origin browser form does.
func (b *opsBundle) post(t *testing.T, user string, form url.Values, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://ops.example/ops", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", "http://ops.example")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	req.AddCookie(&http.Cookie{Name: "session", Value: user})
	rec := httptest.NewRecorder()
	b.d.ServeHTTP(rec, req)
	return rec
}

// act posts an action with a fresh token of user and wants it done.
func (b *opsBundle) act(t *testing.T, user string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	_, token := b.page(t, user, "")
	form.Set("token", token)
	rec := b.post(t, user, form)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("POST %v = %d %s; want 303", form, rec.Code, rec.Body)
	}
	return rec
}

func (b *opsBundle) depth(t *testing.T) queue.Depth {
	t.Helper()
	d, err := b.q.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Without WithActions the page has no form and no token, and a POST,
// even a well-formed one, is refused and changes nothing.
func TestActionsOffByDefault(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	_, token := b.page(t, "ana", "")
	readOnly, err := dashboard.NewManual(&fakeSource{})
	if err != nil {
		t.Fatal(err)
	}
	before := b.fleet(t)
	req := httptest.NewRequest(http.MethodPost, "/ops", strings.NewReader(url.Values{
		"action": {"purge-all"}, "queue": {"mail"}, "confirm": {"yes"}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
	rec := httptest.NewRecorder()
	readOnly.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST to a read-only dashboard = %d, Allow %q; want 405, GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
	page := get(t, readOnly, http.MethodGet, "/ops?queue=mail").Body.String()
	if strings.Contains(page, "<form") || strings.Contains(page, `name="token"`) || strings.Contains(page, `id="actions"`) {
		t.Errorf("the read-only page shows forms or a token")
	}
	if csp := get(t, readOnly, http.MethodGet, "/ops").Header().Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'none'") {
		t.Errorf("read-only CSP %q allows forms", csp)
	}
	if after := b.fleet(t); after != before {
		t.Errorf("fleet changed from %+v to %+v", before, after)
	}
}

// Pause and resume a job, fleet-wide; each is logged and traced with who
// did it.
func TestActionPauseResume(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	rec := b.act(t, "ana", url.Values{"action": {"pause"}, "job": {"nightly"}, "for": {"10m"}})
	if loc := rec.Header().Get("Location"); loc != "?done=pause&job=nightly&n=0#actions" {
		t.Errorf("Location = %q", loc)
	}
	j, err := b.in.Job(context.Background(), "nightly")
	if err != nil || !j.Lock.Paused || j.Lock.PausedUntil.Sub(j.Lock.Now) > 10*time.Minute || j.Lock.PausedUntil.Sub(j.Lock.Now) < 9*time.Minute {
		t.Fatalf("after pause, Job = %+v, %v; want paused for about 10m", j.Lock, err)
	}
	page, _ := b.page(t, "ana", "?done=pause&n=0")
	if !strings.Contains(page, "Job paused fleet-wide.") || !strings.Contains(page, `value="resume"`) {
		t.Errorf("the page after a pause says neither what was done nor offers Resume")
	}
	b.act(t, "bob", url.Values{"action": {"resume"}, "job": {"nightly"}})
	if j, err := b.in.Job(context.Background(), "nightly"); err != nil || j.Lock.Paused {
		t.Fatalf("after resume, Job = %+v, %v; want not paused", j.Lock, err)
	}

	spans := b.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans; want 2", len(spans))
	}
	for i, want := range []struct{ action, actor string }{{"pause", "ana"}, {"resume", "bob"}} {
		s := spans[i]
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if s.Name() != telemetry.SpanAction || attrs[string(telemetry.AttrAction)] != want.action ||
			attrs[string(telemetry.AttrActor)] != want.actor || attrs[string(telemetry.AttrJob)] != "nightly" {
			t.Errorf("span %d = %s %v; want %s by %s on nightly", i, s.Name(), attrs, want.action, want.actor)
		}
	}
	logs := b.logs.String()
	for _, want := range []string{`"action":"pause","job":"nightly"`, `"actor":"ana"`, `"actor":"bob","action":"resume"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

// The dead letters show with their cause, attempts and an escaped,
// capped payload preview; retry one, the selected, all; purge one, all.
func TestActionDeadLetters(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	page, _ := b.page(t, "ana", "?queue=mail")
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;dead&#34;)&lt;/script&gt;`, // the payload, escaped
		`smtp refused &lt;b&gt;0&lt;/b&gt;`,                  // the cause, escaped
		strings.Repeat("x", 256) + "</code>",                 // capped at 256 bytes
		`… 400 B`, `data-id="` + b.dead[0] + `"`, `value="run"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue's page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, strings.Repeat("x", 257)) {
		t.Errorf("the page holds the raw payload or more than 256 bytes of it")
	}
	if !strings.Contains(page, `value="cancel"`) {
		t.Errorf("no cancel button")
	}

	b.act(t, "ana", url.Values{"action": {"retry"}, "queue": {"mail"}, "id": {b.dead[0]}})
	if d := b.depth(t); d.Dead != 1 || d.Pending != 2 {
		t.Fatalf("after retrying one, depth = %+v; want 1 dead, 2 pending", d)
	}
	b.act(t, "ana", url.Values{"action": {"purge"}, "queue": {"mail"}, "id": {b.dead[1]}})
	if d := b.depth(t); d.Dead != 0 || d.Pending != 2 {
		t.Fatalf("after purging one, depth = %+v; want 0 dead", d)
	}
	if _, err := b.in.Item(context.Background(), "mail", b.dead[1]); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("the purged item: %v; want ErrNotFound", err)
	}
}

// Retry the selected, and all; purge all (with its confirmation).
func TestActionDeadLettersSelectedAndAll(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	rec := b.act(t, "ana", url.Values{"action": {"retry"}, "queue": {"mail"}, "id": b.dead})
	if loc := rec.Header().Get("Location"); loc != "?done=retry&n=2&queue=mail#actions" {
		t.Errorf("Location = %q", loc)
	}
	if d := b.depth(t); d.Dead != 0 || d.Pending != 3 {
		t.Fatalf("after retrying the selected, depth = %+v; want 0 dead, 3 pending", d)
	}
	// Kill them again: the two retried and the pending one.
	ctx := context.Background()
	items, err := b.q.Claim(ctx, 3)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d, %v", len(items), err)
	}
	for _, it := range items {
		if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
			t.Fatal(err)
		}
	}
	// Retry all, and purge all, need confirm=yes.
	_, token := b.page(t, "ana", "")
	if rec := b.post(t, "ana", url.Values{"action": {"purge-all"}, "queue": {"mail"}, "token": {token}}); rec.Code != http.StatusBadRequest {
		t.Errorf("purge-all without confirm = %d; want 400", rec.Code)
	}
	b.act(t, "ana", url.Values{"action": {"retry-all"}, "queue": {"mail"}, "confirm": {"yes"}})
	if d := b.depth(t); d.Dead != 0 || d.Pending != 3 {
		t.Fatalf("after retry-all, depth = %+v; want 0 dead, 3 pending", d)
	}
	items, err = b.q.Claim(ctx, 3)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d, %v", len(items), err)
	}
	for _, it := range items {
		if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
			t.Fatal(err)
		}
	}
	rec = b.act(t, "ana", url.Values{"action": {"purge-all"}, "queue": {"mail"}, "confirm": {"yes"}})
	if d := b.depth(t); d.Dead != 0 || d.Pending != 0 || d.Delayed != 1 {
		t.Fatalf("after purge-all, depth = %+v; want only the delayed item", d)
	}
	if loc := rec.Header().Get("Location"); loc != "?done=purge-all&n=3&queue=mail#actions" {
		t.Errorf("Location = %q", loc)
	}
}

// Run a delayed item now; a script asking for JSON gets the count.
func TestActionRunNow(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	_, token := b.page(t, "ana", "")
	req := httptest.NewRequest(http.MethodPost, "/ops?format=json", strings.NewReader(url.Values{
		"action": {"run"}, "queue": {"mail"}, "id": {b.delayed}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
	rec := httptest.NewRecorder()
	b.d.ServeHTTP(rec, req) // a script: no Sec-Fetch-Site, no Origin
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"action":"run","queue":"mail","count":1}` {
		t.Fatalf("POST run = %d %s", rec.Code, rec.Body)
	}
	it, err := b.in.Item(context.Background(), "mail", b.delayed)
	if err != nil || it.State != inspect.StatePending {
		t.Fatalf("the delayed item after run: %+v, %v; want pending", it, err)
	}
	// An id that is not delayed is skipped.
	b.act(t, "ana", url.Values{"action": {"run"}, "queue": {"mail"}, "id": {b.pending}})
	if d := b.depth(t); d.Pending != 2 || d.Delayed != 0 {
		t.Errorf("depth = %+v; want 2 pending", d)
	}
}

// Cancel ends a pending or delayed task ([inspect.Inspector.Cancel]):
// each has its button, and the canceled one is gone from the queue.
func TestActionCancel(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	page, _ := b.page(t, "ana", "?queue=mail")
	if strings.Count(page, `value="cancel"`) != 2 { // the delayed item and the pending one
		t.Errorf("%d cancel buttons; want 2", strings.Count(page, `value="cancel"`))
	}
	b.act(t, "ana", url.Values{"action": {"cancel"}, "queue": {"mail"}, "id": {b.delayed}})
	if d := b.depth(t); d.Delayed != 0 {
		t.Errorf("depth after cancel = %+v; want nothing delayed", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if it, err := b.in.Item(ctx, "mail", b.delayed); err == nil && it.State == inspect.StateDelayed {
		t.Errorf("Item after cancel = %+v; want it no longer delayed", it)
	}
}

func TestActionsInvalidOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	in, err := inspect.New(rdb, inspect.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]dashboard.Option{
		"short key":     {dashboard.WithActions(in, actionKey[:31], sessionUser)},
		"nil inspector": {dashboard.WithActions(nil, actionKey, sessionUser)},
		"nil who":       {dashboard.WithActions(in, actionKey, nil)},
	} {
		if _, err := dashboard.NewManual(&fakeSource{}, opts...); !errors.Is(err, dashboard.ErrInvalidOption) {
			t.Errorf("%s: %v; want ErrInvalidOption", name, err)
		}
	}
}

// A chain's step links to the chain's progress, a fan-out's child to the
// fan-out's; both read-only.
func TestActionsFlows(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	ctx := context.Background()
	client, err := tasks.NewClient(b.q)
	if err != nil {
		t.Fatal(err)
	}
	type args struct{ N int }
	render, send, logs := tasks.Define[args, any]("render"), tasks.Define[args, any]("send"), tasks.Define[args, any]("log")
	part, join := tasks.Define[args, any]("part"), tasks.Define[args, any]("join")
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{render.Step(args{1}), send.Step(args{2}), logs.Step(args{3})})
	if err != nil {
		t.Fatal(err)
	}
	fan, err := tasks.EnqueueFanOut(ctx, client, []tasks.Step{part.Step(args{1}), part.Step(args{2})}, join.Step(args{0}))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := b.page(t, "ana", "?queue=mail")
	for _, want := range []string{
		`href="?chain=` + chain + `&amp;queue=mail#flow">chain step 1 of 3</a>`,
		`href="?fanout=` + fan + `&amp;queue=mail#flow">fan-out child`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue's page lacks %s", want)
		}
	}
	page, _ = b.page(t, "ana", "?queue=mail&chain="+chain)
	for _, want := range []string{`data-flow="chain"`, "running · step 1 of 3", `<li data-state="running">step 1: running · <code>` + chain, `<li data-state="waiting">step 3: waiting</li>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the chain's page lacks %s", want)
		}
	}
	page, _ = b.page(t, "ana", "?queue=mail&fanout="+fan)
	if !strings.Contains(page, "running · 2 children: 0 done, 0 dead, 2 running or waiting") {
		t.Errorf("the fan-out's page lacks its progress")
	}
	page, _ = b.page(t, "ana", "?queue=mail&chain="+strings.Repeat("a", 26))
	if !strings.Contains(page, "inspect: not found") {
		t.Errorf("an unknown chain's page does not say it is not found")
	}
}

// With Redis unreachable the page still serves, saying the fleet could
// not be read, and an action fails with 500.
func TestActionsRedisDown(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	in, err := inspect.New(rdb, inspect.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.NewManual(&fakeSource{}, dashboard.WithActions(in, actionKey, sessionUser),
		dashboard.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	_, token := opsSetup(t).page(t, "ana", "") // a replica's, with the same key
	b := &opsBundle{d: d}
	if page, _ := b.page(t, "ana", "?queue=mail"); !strings.Contains(page, "Reading the fleet failed: ") {
		t.Errorf("the page with Redis down does not say the fleet could not be read")
	}
	if rec := b.post(t, "ana", url.Values{"action": {"resume"}, "job": {"nightly"}, "token": {token}}); rec.Code != http.StatusInternalServerError {
		t.Errorf("an action with Redis down = %d %s; want 500", rec.Code, rec.Body)
	}
}

// A canceled chain and a canceled fan-out show canceled, as
// tasks.ChainStatus reads them: the chain's current step and the steps
// after it, which never run; the fan-out's children not done.
func TestActionsCanceledFlows(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err := tasks.NewClient(b.q)
	if err != nil {
		t.Fatal(err)
	}
	type args struct{ N int }
	render, send, logs := tasks.Define[args, any]("render"), tasks.Define[args, any]("send"), tasks.Define[args, any]("log")
	part, join := tasks.Define[args, any]("part"), tasks.Define[args, any]("join")
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{render.Step(args{1}), send.Step(args{2}), logs.Step(args{3})})
	if err != nil {
		t.Fatal(err)
	}
	fan, err := tasks.EnqueueFanOut(ctx, client, []tasks.Step{part.Step(args{1}), part.Step(args{2}), part.Step(args{3})},
		join.Step(args{0}))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{chain, fan} {
		if err := tasks.Cancel(ctx, client, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
	page, _ := b.page(t, "ana", "?queue=mail&chain="+chain)
	for _, want := range []string{`data-flow="chain"`, "canceled · step 1 of 3", `<li data-state="canceled">step 1: canceled · <code>` + chain,
		`<li data-state="canceled">step 2: canceled</li>`, `<li data-state="canceled">step 3: canceled</li>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the canceled chain's page lacks %s", want)
		}
	}
	page, _ = b.page(t, "ana", "?queue=mail&fanout="+fan)
	if want := "canceled · 3 children: 0 done, 0 dead, 3 canceled"; !strings.Contains(page, want) {
		t.Errorf("the canceled fan-out's page lacks %s", want)
	}
	if strings.Contains(page, "unknown") {
		t.Errorf("the canceled fan-out's page says unknown")
	}
}

// Text read from Redis that is not UTF-8 (a dead letter's cause and
// payload, a registered job's name) reaches the page, which says it is
// UTF-8, with the invalid bytes as U+FFFD, its markup escaped; and the
// JSON document too.
func TestActionsInvalidUTF8(t *testing.T) {
	t.Parallel()
	b := opsSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := registry.Write(ctx, b.rdb, b.prefix, []registry.Job{{Name: "night\xff<i>ly", BudgetMS: 50, EveryMS: 60000}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.Enqueue(ctx, []byte("payload \xff\xc3( <b>")); err != nil {
		t.Fatal(err)
	}
	items, err := b.q.Claim(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := b.q.Nack(ctx, it, errors.New("<script>alert(2)</script> cause \xff\xc3(")); err != nil {
			t.Fatal(err)
		}
	}
	for _, query := range []string{"?queue=mail", "?queue=mail&format=json"} {
		req := httptest.NewRequest(http.MethodGet, "/ops"+query, nil)
		req.AddCookie(&http.Cookie{Name: "session", Value: "ana"})
		rec := httptest.NewRecorder()
		b.d.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), "charset=utf-8") {
			t.Fatalf("GET %s = %d %s", query, rec.Code, rec.Header().Get("Content-Type"))
		}
		if !utf8.Valid(body) {
			i := 0
			for i < len(body) {
				r, n := utf8.DecodeRune(body[i:])
				if r == utf8.RuneError && n == 1 {
					break
				}
				i += n
			}
			t.Errorf("GET %s: the body is not UTF-8: %q", query, body[max(0, i-40):min(len(body), i+20)])
		}
		if strings.Contains(query, "json") {
			continue
		}
		page := string(body)
		for _, want := range []string{"&lt;script&gt;alert(2)&lt;/script&gt; cause \uFFFD(", "night\uFFFD&lt;i&gt;ly", "payload \uFFFD( &lt;b&gt;"} {
			if !strings.Contains(page, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if strings.Contains(page, "<script>alert(2)") || strings.Contains(page, "<i>ly") {
			t.Errorf("the page shows markup from Redis unescaped")
		}
	}
}
