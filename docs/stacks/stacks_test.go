package stacks

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	"github.com/worksteal/worksteal/recruiter"
)

// cache is every snippet's cache: item 1 is a hit, any other a miss.
var cache = map[string][]byte{"1": []byte(`{"id":1,"name":"cap"}`)}

// TestStacks serves each stack's snippet on a real recruiter, every
// request drawn: a cache hit runs a slice, a miss does not, and the
// client gets the answer.
func TestStacks(t *testing.T) {
	t.Parallel()
	get := func(path string) *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) }
	getItem := func(id string) *http.Request { // the Connect protocol's unary call, in JSON
		r := httptest.NewRequest(http.MethodPost, getItemPath, strings.NewReader(strconv.Quote(id)))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, tc := range []struct {
		name      string
		handler   func(*recruiter.Recruiter) http.Handler
		hit, miss *http.Request
	}{
		{"net/http", netHTTP, get("/items/1"), get("/items/2")},
		{"chi", chiRouter, get("/items/1"), get("/items/2")},
		{"gorilla/mux", gorillaMux, get("/items/1"), get("/items/2")},
		{"connect", func(rec *recruiter.Recruiter) http.Handler { return connectServer(rec).Handler }, getItem("1"), getItem("2")},
		{"connect interceptor", connectInterceptor, getItem("1"), getItem("2")},
		{"huma", humaAPI, get("/items/1"), get("/items/2")},
		{"gin", ginEngine, get("/items/1"), get("/items/2")},
		{"echo v5", echoV5, get("/items/1"), get("/items/2")},
		{"echo v4", echoV4, get("/items/1"), get("/items/2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := stealtest.New(t, false)
			rig.Draw()
			srv := stealtest.Serve(t, rig.Wrap(tc.handler(rig.Rec)))
			call := func(r *http.Request) int {
				t.Helper()
				rig.ForgetCoolOffs()
				req, err := http.NewRequest(r.Method, srv.URL+r.URL.Path, r.Body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = r.Header
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				rig.Settle(t)
				return resp.StatusCode
			}
			if code := call(tc.hit); code != http.StatusOK || rig.Started() != 1 {
				t.Errorf("a cache hit: %d, %d slices; want 200 and one slice", code, rig.Started())
			}
			if code := call(tc.miss); code != http.StatusNotFound || rig.Started() != 1 {
				t.Errorf("a miss: %d, %d slices in all; want 404 and no other slice", code, rig.Started())
			}
		})
	}
}

// TestFiberSliceStartsAfterTheResponse: the fiber recipe's slice starts
// once fasthttp has written the whole response to the connection, and a
// miss runs none.
func TestFiberSliceStartsAfterTheResponse(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: ln}
	var atStart atomic.Value // what the connection had when the slice started
	rig.SetJob(func(context.Context) (recruiter.Report, error) {
		atStart.Store(rec.written())
		return recruiter.Report{}, nil
	})
	app := fiberApp(rig.Rec)
	served := make(chan error, 1)
	go func() { served <- app.Listener(rec) }()
	t.Cleanup(func() {
		app.Shutdown()
		<-served
	})
	rig.Draw()
	client := &http.Client{Transport: &http.Transport{}} // keep-alive: fasthttp's usual path
	t.Cleanup(client.CloseIdleConnections)
	for _, tc := range []struct {
		id     string
		status int
		runs   int // in all
	}{{"1", http.StatusOK, 1}, {"2", http.StatusNotFound, 1}} {
		rig.ForgetCoolOffs()
		resp, err := client.Get("http://" + ln.Addr().String() + "/items/" + tc.id)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("/items/%s: %d, want %d", tc.id, resp.StatusCode, tc.status)
		}
		if tc.status == http.StatusOK {
			rig.NextRun(t)
		}
		rig.Settle(t)
		if n := rig.Started(); n != tc.runs {
			t.Fatalf("/items/%s: %d slices in all, want %d", tc.id, n, tc.runs)
		}
	}
	sent, _ := atStart.Load().(string)
	if !strings.HasPrefix(sent, "HTTP/1.1 200 OK") || !strings.HasSuffix(sent, string(cache["1"])) {
		t.Fatalf("when the slice started, the connection had %q; want the whole response", sent)
	}
}

// recordingListener's connections record what the server writes; it
// keeps the latest connection's.
type recordingListener struct {
	net.Listener
	mu   sync.Mutex
	last *recordingConn
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recordingConn{Conn: c, l: l}
	l.mu.Lock()
	l.last = rc
	l.mu.Unlock()
	return rc, nil
}

func (l *recordingListener) written() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		return ""
	}
	return string(l.last.sent)
}

type recordingConn struct {
	net.Conn
	l    *recordingListener
	sent []byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.sent = append(c.sent, p...)
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// TestBuilt builds the snippets that are not served here: gRPC's
// (stealgrpc's own tests serve it) and twirp's, whose server is a
// stand-in.
func TestBuilt(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	grpcServer(rig.Rec).Stop()
	if h := twirpServer(rig.Rec); h == nil {
		t.Fatal("no twirp handler")
	}
}
