package stealhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// syncBuffer is a server's error log, read while the server may write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInlineLeavesAHijackedConnectionAlone: a marked handler that hijacks
// its connection (a websocket-style upgrade) owns it; the inline flush must
// not write to it (net/http logged a WriteHeader on a hijacked connection,
// then panicked in FlushError), and the slice still runs.
func TestInlineLeavesAHijackedConnectionAlone(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	rig.Draw()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\nhello")
		_ = rw.Flush()
	})
	srv := httptest.NewUnstartedServer(rig.Wrap(stealhttp.Middleware(rig.Rec)(h)))
	errLog := &syncBuffer{}
	srv.Config.ErrorLog = log.New(errLog, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || string(body) != "hello" {
		t.Errorf("the client got %d %q, want the handler's 101 and hello", resp.StatusCode, body)
	}
	rig.Settle(t)
	if rig.Started() != 1 {
		t.Errorf("%d slices ran, want 1", rig.Started())
	}
	if log := errLog.String(); log != "" {
		t.Errorf("the server logged:\n%s", log)
	}
}

// TestInlineUnderTimeoutHandler: http.TimeoutHandler's writer cannot
// flush, so an inline slice could not run after the response; it must go
// to the background rather than run inside the handler's time limit and
// turn the handler's 200 into a 503.
func TestInlineUnderTimeoutHandler(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	rig.Draw()
	const limit = 300 * time.Millisecond
	rig.SetJob(func(context.Context) (recruiter.Report, error) {
		time.Sleep(2 * limit) // longer than the handler may take, whatever the machine's load
		return recruiter.Report{}, nil
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		_, _ = io.WriteString(w, "cached")
	})
	srv := stealtest.Serve(t, rig.Wrap(http.TimeoutHandler(stealhttp.Middleware(rig.Rec)(h), limit, "timed out")))

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "cached" {
		t.Errorf("the client got %d %q, want 200 cached", resp.StatusCode, body)
	}
	rig.NextRun(t) // the slice still runs, in the background
}

// TestFlushCommitsTheStatus: a Flush sends 200 whatever the handler writes
// as a status later, so Exit.Status is 200: a later 304 is no fast exit,
// a later 500 does not hide a marked one.
func TestFlushCommitsTheStatus(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	rig.Draw()
	var statuses []int
	var mu sync.Mutex
	classify := stealhttp.WithClassifier(func(e stealhttp.Exit) bool {
		mu.Lock()
		statuses = append(statuses, e.Status)
		mu.Unlock()
		return stealhttp.DefaultClassifier(e)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/then-304", func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).Flush()
		w.WriteHeader(http.StatusNotModified) // too late: 200 went out
	})
	mux.HandleFunc("/marked-then-500", func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
		http.NewResponseController(w).Flush()
		http.Error(w, "late", http.StatusInternalServerError) // too late too
	})
	srv := stealtest.Serve(t, rig.Wrap(stealhttp.Middleware(rig.Rec, classify)(mux)))

	for _, path := range []string{"/then-304", "/marked-then-500"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: the client got %d; the test expects net/http to send 200 at the flush", path, resp.StatusCode)
		}
		rig.Settle(t)
		rig.ForgetCoolOffs()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(statuses) != 2 || statuses[0] != http.StatusOK || statuses[1] != http.StatusOK {
		t.Errorf("Exit.Status = %v, want [200 200]: what the client got", statuses)
	}
	if rig.Started() != 1 {
		t.Errorf("%d slices ran, want 1 (the marked request only)", rig.Started())
	}
}

// TestFiltersAddUp: every WithFilter must keep a request for it to run a
// slice, as otelhttp's filters do.
func TestFiltersAddUp(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	rig.Draw()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context())
	})
	mw := stealhttp.Middleware(rig.Rec,
		stealhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/health" }),
		stealhttp.WithFilter(nil),
		stealhttp.WithFilter(func(r *http.Request) bool { return r.Method == http.MethodGet }))
	srv := stealtest.Serve(t, rig.Wrap(mw(h)))
	stealtest.Get(t, srv.URL+"/health", nil)
	resp, err := http.Post(srv.URL+"/item", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rig.Settle(t)
	if rig.Started() != 0 {
		t.Fatalf("%d slices ran for requests a filter excluded", rig.Started())
	}
	stealtest.Get(t, srv.URL+"/item", nil)
	rig.NextRun(t)
}

// TestBodilessResponsesOnHTTP2: a drawn 204 or 304 (http.ServeContent's
// and http.ServeFile's to a conditional GET, a handler's 204) reaches the
// client as it does without the middleware, on HTTP/1.1 and on HTTP/2:
// there a flushed one went out without the end of its stream, and the
// client read a body of unknown length (ContentLength -1, and a dump with
// "Connection: close"). In inline mode the client has the whole response
// while the slice runs, which for such a response on HTTP/2 is in the
// background.
func TestBodilessResponsesOnHTTP2(t *testing.T) {
	t.Parallel()
	modified := time.Date(2024, time.May, 1, 12, 0, 0, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "page.txt")
	if err := os.WriteFile(file, []byte("a page"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, modified, modified); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/content", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "page.txt", modified, strings.NewReader("a page"))
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	since := modified.Format(http.TimeFormat)
	requests := []struct {
		name, path, header, value string
		status                    int
	}{
		{"ServeContent If-None-Match", "/content", "If-None-Match", `"v1"`, http.StatusNotModified},
		{"ServeContent If-Modified-Since", "/content", "If-Modified-Since", since, http.StatusNotModified},
		{"ServeFile", "/file", "If-Modified-Since", since, http.StatusNotModified},
		{"WriteHeader(204)", "/empty", "", "", http.StatusNoContent},
	}
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			t.Parallel()
			rig := stealtest.New(t, inline)
			started, release := make(chan struct{}, 1), make(chan struct{})
			rig.SetJob(func(context.Context) (recruiter.Report, error) {
				started <- struct{}{}
				<-release // the client must have the whole response meanwhile
				return recruiter.Report{}, nil
			})
			rig.Draw()
			type pair struct{ with, without *httptest.Server }
			servers := map[bool]pair{}
			for _, h2 := range []bool{false, true} {
				servers[h2] = pair{serveOn(t, rig.Wrap(stealhttp.Middleware(rig.Rec)(mux)), h2), serveOn(t, mux, h2)}
			}
			t.Cleanup(func() { close(release) }) // before the servers close: they wait for their handlers
			for _, h2 := range []bool{false, true} {
				for _, rq := range requests {
					name := fmt.Sprintf("%s, HTTP/2 %v", rq.name, h2)
					rig.ForgetCoolOffs()
					want := summary(t, servers[h2].without, rq.path, rq.header, rq.value, h2)
					if !strings.HasPrefix(want, fmt.Sprintf("%d, Content-Length 0,", rq.status)) {
						t.Fatalf("%s, without the middleware: %s; the test expects %d and Content-Length 0", name, want, rq.status)
					}
					if got := summary(t, servers[h2].with, rq.path, rq.header, rq.value, h2); got != want {
						t.Errorf("%s differs with the middleware:\n%s\nwithout:\n%s", name, got, want)
					}
					select {
					case <-started:
					case <-time.After(5 * time.Second):
						t.Fatalf("%s: no slice started within 5s", name)
					}
					// An inline slice that held the response back until
					// the client gave up on it would have been declared hung.
					if hung := rig.Rec.Stats().Jobs[0].Hung; hung != 0 {
						t.Fatalf("%s: the client had the response only once its slice was declared hung", name)
					}
					release <- struct{}{}
					rig.Settle(t)
				}
			}
		})
	}
}

// serveOn serves h on a test server closed at cleanup: over TLS on
// HTTP/2 with h2, else on HTTP/1.1.
func serveOn(t *testing.T, h http.Handler, h2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if h2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// summary GETs path on srv with one request header (if named) and sums up
// what the client read: status, ContentLength, header but Date, and the
// dump of it all, body included.
func summary(t *testing.T, srv *httptest.Server, path, header, value string, h2 bool) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if h2 != (resp.ProtoMajor == 2) {
		t.Fatalf("GET %s was served on %s", path, resp.Proto)
	}
	resp.Header.Del("Date")
	raw, err := httputil.DumpResponse(resp, true)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d, Content-Length %d, header %v, dump:\n%s", resp.StatusCode, resp.ContentLength, resp.Header, raw)
}
