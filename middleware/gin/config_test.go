package stealgin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgin "github.com/worksteal/worksteal/middleware/gin"
	"github.com/worksteal/worksteal/recruiter"
)

func TestConfigWithoutRecruiter(t *testing.T) {
	t.Parallel()
	mw, err := stealgin.Config{}.ToMiddleware()
	if mw != nil || err == nil || err.Error() != "stealgin: Config.Recruiter is nil" {
		t.Fatalf("ToMiddleware without a Recruiter: %v, %v; want no middleware and the error naming the field", mw != nil, err)
	}
	for name, build := range map[string]func(){
		"Middleware(nil)":                func() { stealgin.Middleware(nil) },
		"MiddlewareWithConfig(Config{})": func() { stealgin.MiddlewareWithConfig(stealgin.Config{}) },
	} {
		func() {
			defer func() {
				if p, ok := recover().(error); !ok || p.Error() != err.Error() {
					t.Errorf("%s panicked with %v, want %q", name, p, err)
				}
			}()
			build()
		}()
	}
}

func TestDefaultClassifier(t *testing.T) {
	t.Parallel()
	attached := []*gin.Error{{Err: errors.New("audit write failed"), Type: gin.ErrorTypePrivate}}
	for _, tc := range []struct {
		exit stealgin.Exit
		want bool
	}{
		{stealgin.Exit{Status: 200, Marked: true}, true},
		{stealgin.Exit{Status: 200}, false},
		{stealgin.Exit{Status: 204}, true},
		{stealgin.Exit{Status: 304}, true},
		{stealgin.Exit{Status: 404, Marked: true}, true},
		{stealgin.Exit{Status: 404}, false},
		{stealgin.Exit{Status: 500, Marked: true}, false},
		{stealgin.Exit{Status: 503}, false},
		{stealgin.Exit{Status: 200, Errors: attached, Marked: true}, false},
		{stealgin.Exit{Status: 304, Errors: attached}, false},
	} {
		if got := stealgin.DefaultClassifier(tc.exit); got != tc.want {
			t.Errorf("DefaultClassifier(%+v) = %v, want %v", tc.exit, got, tc.want)
		}
	}
}

// seenExit is what a test classifier keeps of an Exit: gin reuses the
// Context and its Errors, so they are read during the call.
type seenExit struct {
	route  string
	status int
	errors string
	marked bool
}

// TestSkipperAndClassifier: on a group, the Skipper keeps requests from
// the classifier, which sees the route, the status the client gets, the
// errors attached and the mark; routes outside the group are untouched.
func TestSkipperAndClassifier(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var mu sync.Mutex
	var seen []seenExit
	classify := func(e stealgin.Exit) bool {
		mu.Lock()
		var errs []string
		for _, err := range e.Errors {
			errs = append(errs, err.Error())
		}
		seen = append(seen, seenExit{e.Context.FullPath(), e.Status, strings.Join(errs, "; "), e.Marked})
		mu.Unlock()
		if e.Elapsed <= 0 {
			t.Errorf("%s: Elapsed %v", e.Context.FullPath(), e.Elapsed)
		}
		return e.Status == http.StatusOK && e.Context.FullPath() == "/api/slow"
	}
	r := gin.New()
	api := r.Group("/api", stealgin.MiddlewareWithConfig(stealgin.Config{
		Recruiter:  rig.Rec,
		Skipper:    func(c *gin.Context) bool { return strings.HasPrefix(c.FullPath(), "/api/admin") },
		Classifier: classify,
	}))
	routes(api)
	routes(r)
	api.DELETE("/admin/cache", func(c *gin.Context) {
		marked(c)
		c.Status(http.StatusNoContent)
	})
	srv := stealtest.Serve(t, rig.Wrap(r))
	rig.Draw()
	for _, path := range []string{"/api/hit", "/api/unchanged", "/api/aborted", "/api/reported", "/hit", "/api/slow"} {
		stealtest.Get(t, srv.URL+path, nil)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/admin/cache", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /api/admin/cache: %v, %v", resp, err)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1: only /api/slow is a fast exit to the classifier, /api/admin is skipped", n)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []seenExit{
		{route: "/api/hit", status: 200, marked: true},
		{route: "/api/unchanged", status: 304, marked: true},
		{route: "/api/aborted", status: 503, marked: true},
		{route: "/api/reported", status: 200, errors: "the cache answered, the audit write failed", marked: true},
		{route: "/api/slow", status: 200},
	}
	if len(seen) != len(want) {
		t.Fatalf("the classifier saw %+v, want %+v (none for /hit, outside the group, nor for the skipped /api/admin)", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("exit %d: the classifier saw %+v, want %+v", i, seen[i], want[i])
		}
	}
}

// A Config with only its Recruiter gets the defaults for its nil fields:
// DefaultClassifier (a marked 200 runs a slice, a marked 502 does not)
// and a Skipper that skips nothing.
func TestNilConfigFieldsKeepTheDefaults(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true) // inline: the slice has run when ServeHTTP returns
	rig.Draw()
	mw, err := stealgin.Config{Recruiter: rig.Rec, Classifier: nil, Skipper: nil}.ToMiddleware()
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.Use(mw)
	r.GET("/ok", func(c *gin.Context) { marked(c); c.String(http.StatusOK, "ok") })
	r.GET("/fail", func(c *gin.Context) { marked(c); c.AbortWithStatus(http.StatusBadGateway) })
	serve := func(path string, want int) int {
		rig.ForgetCoolOffs()
		before := rig.Started()
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Fatalf("GET %s: %d, want %d", path, rec.Code, want)
		}
		return rig.Started() - before
	}
	if n := serve("/ok", http.StatusOK); n != 1 {
		t.Fatalf("a marked 200 started %d slices, want 1", n)
	}
	if n := serve("/fail", http.StatusBadGateway); n != 0 {
		t.Fatalf("a marked 502 started %d slices, want 0", n)
	}
}

// TestPanicGoesToRecovery: a drawn request whose handler panics runs no
// slice, and gin.Recovery, outside the middleware, answers it as without
// the middleware: a 500 when nothing was written, and what the handler
// wrote (held by the middleware) when it wrote a body first.
func TestPanicGoesToRecovery(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	serve := func(mws ...gin.HandlerFunc) string {
		r := gin.New()
		r.Use(quietRecovery())
		r.Use(mws...)
		r.GET("/early", func(c *gin.Context) { marked(c); panic("before any write") })
		r.GET("/late", func(c *gin.Context) {
			marked(c)
			c.Header("X-Cache", "HIT")
			c.String(http.StatusOK, "cached answer")
			panic("after the body")
		})
		srv := stealtest.Serve(t, rig.Wrap(r))
		return stealtest.Get(t, srv.URL+"/early", nil) + "\n---\n" + stealtest.Get(t, srv.URL+"/late", nil)
	}
	want := serve()
	rig.Draw()
	if got := serve(stealgin.Middleware(rig.Rec)); got != want {
		t.Errorf("with the middleware, drawn:\n%s\nwithout:\n%s", got, want)
	}
	if !strings.HasPrefix(want, "HTTP/1.1 500") {
		t.Errorf("the bare server answered\n%s\nwant gin.Recovery's 500 first", want)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for handlers that panicked", n)
	}
}

// TestMarkOnTheGinContext: with engine.ContextWithFallback, a handler may
// mark the *gin.Context itself; without it, that mark reaches nothing
// (the package doc says to mark c.Request.Context()).
func TestMarkOnTheGinContext(t *testing.T) {
	t.Parallel()
	for _, fallback := range []bool{true, false} {
		rig := stealtest.New(t, true)
		rig.Draw()
		r := gin.New()
		r.ContextWithFallback = fallback
		r.Use(stealgin.Middleware(rig.Rec))
		r.GET("/", func(c *gin.Context) { recruiter.MarkFastExit(c); c.String(http.StatusOK, "cached") })
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		want := 0
		if fallback {
			want = 1
		}
		if n := rig.Started(); n != want {
			t.Errorf("ContextWithFallback %v: %d slices, want %d", fallback, n, want)
		}
	}
}

// TestInlineWithoutAFlusher: on a writer that cannot flush, gin's Flush
// says nothing; the middleware learns it from the writer below, so the
// inline slice goes to the background (it starts once the request's
// context ends) instead of running before the response is sent, and the
// response is whole.
func TestInlineWithoutAFlusher(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	var returned, early atomic.Bool
	rig.SetJob(func(context.Context) (recruiter.Report, error) {
		early.Store(!returned.Load())
		return recruiter.Report{}, nil
	})
	r := gin.New()
	r.Use(stealgin.Middleware(rig.Rec))
	routes(r)
	rig.Draw()
	w := &discard{h: http.Header{}}
	ctx, cancel := context.WithCancel(context.Background()) // as net/http's, cancelled once the handler returned
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hit", nil).WithContext(ctx))
	returned.Store(true)
	cancel()
	if got := w.h.Get("X-Cache"); got != "HIT" {
		t.Fatalf("X-Cache %q, want the handler's HIT", got)
	}
	rig.NextRun(t)
	rig.Settle(t)
	if early.Load() {
		t.Error("the slice ran inline, before the request returned, on a writer that cannot flush")
	}
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1", n)
	}
}

// TestStreamingAndHijack: through a drawn request, an SSE stream flushes
// each event to the client as written, and a handler can take the
// connection over (a websocket upgrade) before it writes a body.
func TestStreamingAndHijack(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	next := make(chan struct{})
	r := gin.New()
	r.Use(stealgin.Middleware(rig.Rec))
	r.GET("/events", func(c *gin.Context) {
		marked(c)
		for i := range 2 {
			c.SSEvent("tick", i)
			c.Writer.Flush()
			<-next // the client must have the event before the next is written
		}
	})
	r.GET("/upgrade", func(c *gin.Context) {
		marked(c)
		conn, rw, err := c.Writer.Hijack()
		if err != nil {
			c.String(http.StatusInternalServerError, err.Error())
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nhijacked")
		rw.Flush()
	})
	srv := stealtest.Serve(t, rig.Wrap(r))
	rig.Draw()

	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for i := range 2 {
		n, err := resp.Body.Read(buf)
		if err != nil || !strings.Contains(string(buf[:n]), "event:tick") {
			t.Fatalf("event %d: %q, %v", i, buf[:n], err)
		}
		next <- struct{}{}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rig.Settle(t) // a slice under way would gate the next draw

	rig.ForgetCoolOffs()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/upgrade", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "x")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body.(io.ReadWriteCloser))
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || string(body) != "hijacked" {
		t.Fatalf("upgrade: %d %q, want 101 and the handler's bytes", resp.StatusCode, body)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 2 {
		t.Fatalf("%d slices ran, want 2: both were marked", n)
	}
}
