package stealhttp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/testing/adaptertest"
	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the adapters' suite on stealhttp.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.ExerciseHTTP(t, adaptertest.HTTPHost{Handler: service})
}

// service is the suite's service behind stealhttp as s says.
func service(_ *testing.T, s adaptertest.Setup) http.Handler {
	var opts []stealhttp.Option
	if s.Classify != nil {
		opts = append(opts, stealhttp.WithClassifier(func(e stealhttp.Exit) bool {
			return s.Classify(adaptertest.Seen{
				Answer: strings.TrimPrefix(e.Request.URL.Path, "/"), Status: e.Status, Marked: e.Marked, Elapsed: e.Elapsed,
			})
		}))
	}
	h := routes()
	for _, rec := range slices.Backward(s.Recruiters) {
		h = stealhttp.Middleware(rec, opts...)(h)
	}
	if s.Tracer == nil {
		return h
	}
	// The part of otelhttp that matters here, a server span on the
	// request's context, so that the root module needs no otelhttp
	// (example/ runs the middleware under otelhttp itself).
	tracer := s.Tracer.Tracer("catalog")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// routes answers adaptertest.HTTPAnswers.
func routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(name string, marked bool, answer func(http.ResponseWriter, *http.Request)) {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			adaptertest.Inside(r.Context(), w, r)
			if marked {
				recruiter.MarkFastExit(r.Context())
			}
			answer(w, r)
		})
	}
	handle("hit", true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cache", "HIT")
		io.WriteString(w, "cached answer")
	})
	handle("slow", false, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "computed answer") })
	handle("fail", true, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	handle("missing", true, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no such item", http.StatusNotFound) })
	handle("empty", false, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	handle("same", false, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	handle("sized", true, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	handle("large", true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, adaptertest.LargeBody) })
	handle("streamed", true, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part 1\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "part 2\n")
	})
	return mux
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
