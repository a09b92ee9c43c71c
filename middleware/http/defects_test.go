package stealhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
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
