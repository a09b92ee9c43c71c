package stealhttp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// routes is a small service: each path is one kind of response.
func routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hit", func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		w.Header().Set("X-Cache", "HIT")
		fmt.Fprint(w, "cached answer")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "computed answer") // not marked: not a fast exit
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	return mux
}

func TestDismissedRequestIsUntouched(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var sameWriter, sameRequest atomic.Bool
	var outerW http.ResponseWriter
	var outerR *http.Request
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sameWriter.Store(w == outerW)
		sameRequest.Store(r == outerR)
		routes().ServeHTTP(w, r)
	})
	mw := stealhttp.Middleware(rig.Rec)(inner)
	with := stealtest.Serve(t, rig.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outerW, outerR = w, r
		mw.ServeHTTP(w, r)
	})))
	without := stealtest.Serve(t, routes())
	for _, path := range []string{"/hit", "/slow", "/fail", "/empty", "/same"} {
		if a, b := stealtest.Get(t, with.URL+path, nil), stealtest.Get(t, without.URL+path, nil); a != b {
			t.Errorf("%s differs with the middleware:\n%s\nwithout:\n%s", path, a, b)
		}
		if !sameWriter.Load() || !sameRequest.Load() {
			t.Errorf("%s: the handler got another ResponseWriter (%v) or request (%v)", path, !sameWriter.Load(), !sameRequest.Load())
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed requests", n)
	}
}

func TestDrawnRequests(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec)(routes())))
	without := stealtest.Serve(t, routes())
	rig.Draw()
	for _, tc := range []struct {
		path string
		runs int
	}{{"/hit", 1}, {"/slow", 0}, {"/fail", 0}, {"/empty", 1}, {"/same", 1}} {
		before := rig.Started()
		if a, b := stealtest.Get(t, srv.URL+tc.path, nil), stealtest.Get(t, without.URL+tc.path, nil); a != b {
			t.Errorf("drawn %s differs from the bare handler's:\n%s\nwant:\n%s", tc.path, a, b)
		}
		rig.Settle(t)
		if got := rig.Started() - before; got != tc.runs {
			t.Errorf("drawn %s ran %d slices, want %d", tc.path, got, tc.runs)
		}
	}
}

// TestSliceLinksToTheRequestSpan: with tracing middleware outside the
// middleware, the recruitment span links to the request's span. The
// tracing middleware is the part of otelhttp that matters here, a span
// started on the request's context, so that the root module needs no
// otelhttp (example/ runs the middleware under otelhttp itself).
func TestSliceLinksToTheRequestSpan(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var requestSpan atomic.Value
	h := stealhttp.Middleware(rig.Rec)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestSpan.Store(trace.SpanContextFromContext(r.Context()))
		recruiter.MarkFastExit(r.Context())
	}))
	tracer := rig.Tracer.Tracer("catalog")
	srv := stealtest.Serve(t, rig.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), "GET", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		h.ServeHTTP(w, r.WithContext(ctx))
	})))
	rig.Draw()
	stealtest.Get(t, srv.URL, nil)
	rig.NextRun(t)
	rig.Settle(t)
	spans := rig.RecruitSpans()
	if len(spans) != 1 {
		t.Fatalf("%d recruitment spans, want 1", len(spans))
	}
	sc := requestSpan.Load().(trace.SpanContext)
	if !sc.IsValid() || !stealtest.LinkedTo(spans[0], sc) {
		t.Fatalf("the recruitment span links %+v, want the request span %v", spans[0].Links(), sc)
	}
}

// TestBackgroundSliceStartsAfterTheResponse: the slice begins only once
// the server is done with the handler, and a job that sleeps past its
// budget, panics or fails changes nothing the client sees.
func TestBackgroundSliceStartsAfterTheResponse(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	// An outer handler lingers after the middleware returns: a slice that
	// started at once, not when the server is done, would see it unfinished.
	var handlerDone, doneAtStart atomic.Bool
	mw := stealhttp.Middleware(rig.Rec)(routes())
	srv := stealtest.Serve(t, rig.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlerDone.Store(false)
		mw.ServeHTTP(w, r)
		time.Sleep(20 * time.Millisecond)
		handlerDone.Store(true)
	})))
	observed := func(job func(context.Context) (recruiter.Report, error)) func(context.Context) (recruiter.Report, error) {
		return func(ctx context.Context) (recruiter.Report, error) {
			doneAtStart.Store(handlerDone.Load())
			return job(ctx)
		}
	}
	without := stealtest.Serve(t, routes())
	want := stealtest.Get(t, without.URL+"/hit", nil)
	rig.Draw()
	jobs := map[string]func(context.Context) (recruiter.Report, error){
		"sleeps past its budget": func(ctx context.Context) (recruiter.Report, error) {
			time.Sleep(150 * time.Millisecond)
			return recruiter.Report{}, nil
		},
		"panics": func(context.Context) (recruiter.Report, error) { panic("stolen work broke") },
		"fails":  func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, errors.New("no") },
	}
	for name, job := range jobs {
		rig.SetJob(observed(job))
		rig.ForgetCoolOffs() // each of these jobs rests after its slice
		if got := stealtest.Get(t, srv.URL+"/hit", nil); got != want {
			t.Errorf("with a job that %s the response is\n%s\nwant\n%s", name, got, want)
		}
		rig.NextRun(t)
		rig.Settle(t)
		if !doneAtStart.Load() {
			t.Errorf("a slice (job that %s) started before the server was done with the handler", name)
		}
	}
	js := rig.Rec.Stats().Jobs[0]
	if js.Timeouts != 1 || js.Panics != 1 || js.Errors != 1 {
		t.Fatalf("stats %+v, want one timeout, one panic, one error", js)
	}
}

// TestInlineFlushesBeforeTheSlice: in inline mode the client has a
// response with a Content-Length in full while the slice still runs; a
// chunked one has its body, and its end follows the slice.
func TestInlineFlushesBeforeTheSlice(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	release, abandon := make(chan struct{}), make(chan struct{})
	rig.SetJob(func(context.Context) (recruiter.Report, error) {
		select {
		case <-release:
		case <-abandon: // a failed test must not leave the server waiting on a slice
		}
		return recruiter.Report{}, nil
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		if r.URL.Path == "/sized" {
			w.Header().Set("Content-Length", "5")
		}
		io.WriteString(w, "hello")
	})
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec)(h)))
	t.Cleanup(func() { close(abandon) }) // runs before the server's Close
	client := &http.Client{Timeout: 10 * time.Second}
	rig.Draw()

	resp, err := client.Get(srv.URL + "/sized")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body) // completes while the slice is blocked
	resp.Body.Close()
	if err != nil || string(body) != "hello" {
		t.Fatalf("sized body %q, %v", body, err)
	}
	rig.NextRun(t)
	release <- struct{}{}
	rig.Settle(t)
	rig.ForgetCoolOffs()

	resp, err = client.Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != -1 {
		t.Fatalf("Content-Length %d, want a chunked response", resp.ContentLength)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "hello" {
		t.Fatalf("chunked body %q, %v before the slice ended", first, err)
	}
	rig.NextRun(t)
	ended := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the chunked response ended (%v) while its inline slice still ran", err)
	case <-time.After(20 * time.Millisecond):
	}
	release <- struct{}{}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// TestStreamingThroughTheMiddleware: server-sent events with Flush, the
// ResponseController, io.ReaderFrom and a websocket-style Hijack all work
// on a drawn request.
func TestStreamingThroughTheMiddleware(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	next := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 2 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			<-next // the client must have the event before the next is written
		}
		recruiter.MarkFastExit(r.Context())
	})
	mux.HandleFunc("/controller", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: rc\n\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		<-next
		if _, ok := w.(io.ReaderFrom); !ok {
			io.WriteString(w, "no ReaderFrom")
			return
		}
		io.Copy(w, strings.NewReader("copied"))
	})
	mux.HandleFunc("/upgrade", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		line, _ := buf.ReadString('\n')
		buf.WriteString("echo: " + line)
		buf.Flush()
	})
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec)(mux)))
	rig.Draw()

	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	events := bufio.NewReader(resp.Body)
	for i := range 2 {
		line, err := events.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		events.ReadString('\n')
		next <- struct{}{}
	}
	resp.Body.Close()
	rig.NextRun(t) // the stream marked itself a fast exit

	resp, err = http.Get(srv.URL + "/controller")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: rc\n" {
		t.Fatalf("ResponseController flush: %q, %v", line, err)
	}
	next <- struct{}{}
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(rest), "copied") {
		t.Fatalf("after the flush: %q, want the io.Copy through ReaderFrom", rest)
	}

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /upgrade HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	r := bufio.NewReader(conn)
	status, _ := r.ReadString('\n')
	if status != "HTTP/1.1 101 Switching Protocols\r\n" {
		t.Fatalf("upgrade answered %q", status)
	}
	for line, _ := r.ReadString('\n'); line != "\r\n"; line, _ = r.ReadString('\n') {
	}
	fmt.Fprintf(conn, "ping\n")
	if echo, err := r.ReadString('\n'); err != nil || echo != "echo: ping\n" {
		t.Fatalf("over the hijacked connection: %q, %v", echo, err)
	}
	rig.Settle(t)
}

// TestClientsCannotForceRecruitment: no header, query or method makes a
// request recruited or a fast exit.
func TestClientsCannotForceRecruitment(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec)(routes())))
	forged := http.Header{
		"X-Worksteal":           {"1"},
		"X-Fast-Exit":           {"true"},
		"Worksteal-Recruit":     {"stolen"},
		"If-None-Match":         {"*"},
		"Cache-Control":         {"only-if-cached"},
		"Traceparent":           {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"X-Forwarded-For":       {"127.0.0.1"},
		"X-Worksteal-Fast-Exit": {"1"},
	}
	for _, drawn := range []bool{false, true} {
		if drawn {
			rig.Draw()
		} else {
			rig.Dismiss()
		}
		for _, path := range []string{"/slow?fast_exit=1&worksteal=1", "/fail?recruit=1"} {
			stealtest.Get(t, srv.URL+path, forged)
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("forged requests ran %d slices", n)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var seen atomic.Value
	classify := func(e stealhttp.Exit) bool {
		seen.Store(e)
		return e.Status == http.StatusOK && e.Request.URL.Path == "/slow"
	}
	skipAdmin := func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/admin") }
	mux := http.NewServeMux()
	mux.Handle("/", routes())
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec,
		nil, stealhttp.WithClassifier(classify), stealhttp.WithFilter(skipAdmin))(mux)))
	rig.Draw()
	for _, path := range []string{"/hit", "/admin/purge", "/slow"} {
		stealtest.Get(t, srv.URL+path, nil)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1: only /slow is a fast exit to the classifier, /admin is filtered", n)
	}
	e := seen.Load().(stealhttp.Exit)
	if e.Request.URL.Path != "/slow" || e.Status != 200 || e.Marked || e.Elapsed <= 0 {
		t.Fatalf("the classifier saw %+v", e)
	}
}

func TestDismissedRequestAllocatesNothing(t *testing.T) {
	rig := stealtest.New(t, false)
	h := stealhttp.Middleware(rig.Rec)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w, r := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil)
	if allocs := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); allocs != 0 {
		t.Fatalf("a dismissed request allocates %v times in the middleware, want 0", allocs)
	}
}

func TestNilRecruiterPanicsAtSetUp(t *testing.T) {
	t.Parallel()
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "stealhttp") {
			t.Fatalf("Middleware(nil) recovered %v, want a stealhttp panic", v)
		}
	}()
	stealhttp.Middleware(nil)
}
