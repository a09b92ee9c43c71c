package adaptertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// HTTPAnswers are the answers every HTTPHost's service gives, each at
// /<name>:
//
//   - hit: marked, 200 "cached answer" with the header X-Cache: HIT
//   - slow: not marked, 200 "computed answer"
//   - fail: marked, 500 "boom"
//   - missing: marked, 404 "no such item" (an empty result is a fast exit too)
//   - empty: 204, not marked
//   - same: 304, not marked
//   - sized: marked, 200 "hello" with the handler's Content-Length: 5
//   - large: marked, 200 and [LargeBody], more than net/http buffers, without
//     a Content-Length: chunked
//   - streamed: marked, 200 "part 1\n", a flush, then "part 2\n": chunked
var HTTPAnswers = []Answer{
	{Name: "hit", Marked: true, Runs: 1, Typical: true},
	{Name: "slow"},
	{Name: "fail", Marked: true},
	{Name: "missing", Marked: true, Runs: 1},
	{Name: "empty", Runs: 1},
	{Name: "same", Runs: 1},
	{Name: "sized", Marked: true, Runs: 1},
	{Name: "large", Marked: true, Runs: 1},
	{Name: "streamed", Marked: true, Runs: 1},
}

// LargeBody is the body of the answer "large": 4 KiB.
var LargeBody = string(slices.Repeat([]byte("a line of a large answer, 42 bytes long.\n\n"), 4096/42+1)[:4096])

// chunked are the fast exits of HTTPAnswers whose response is chunked:
// their last chunk follows the handler.
var chunked = map[string]bool{"large": true, "streamed": true}

// HTTPHost is the glue of an adapter on net/http.
type HTTPHost struct {
	// Extra are the host's own answers, beyond HTTPAnswers.
	Extra []Answer
	// Handler returns the service for s: every answer at /<name>, behind
	// an adapter for each of s.Recruiters (the first outermost), with
	// s.Classify as the adapters' classifier and s.Tracer's tracing layer
	// outside them, as Setup says; the suite wraps it in s.Around. Every
	// handler calls Inside with the request's context, then the
	// ResponseWriter and *http.Request it got (the ones the framework
	// writes to and reads, for a framework with a context of its own).
	Handler func(t *testing.T, s Setup) http.Handler
}

// Answers are HTTPAnswers and the host's own.
func (h HTTPHost) Answers() []Answer { return append(slices.Clone(HTTPAnswers), h.Extra...) }

// Serve serves the host's service on HTTP/1.1.
func (h HTTPHost) Serve(t *testing.T, s Setup) Client { return h.serve(t, s, false, false) }

// onHTTP2 is an HTTPHost whose service is served on HTTP/2 (over TLS).
type onHTTP2 struct{ HTTPHost }

func (h onHTTP2) Serve(t *testing.T, s Setup) Client { return h.serve(t, s, false, true) }

// ExerciseHTTP runs [Exercise] and the scenarios of net/http against h.
func ExerciseHTTP(t *testing.T, h HTTPHost) {
	Exercise(t, h)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, HTTPHost)
	}{
		{"WholeResponseBeforeABackgroundSlice", func(t *testing.T, h HTTPHost) { wholeResponseBeforeTheSlice(t, h, false) }},
		{"WholeResponseBeforeAnInlineSlice", func(t *testing.T, h HTTPHost) { wholeResponseBeforeTheSlice(t, h, true) }},
		// HTTP/2 frames a response's end: a 204 or 304 flushed before the
		// handler returns reaches the client with a body of unknown length.
		{"DrawnRequestsOnHTTP2", func(t *testing.T, h HTTPHost) { drawnRequests(t, onHTTP2{h}) }},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, h)
		})
	}
}

type connKey struct{}

// httpServer is an HTTPHost's service on a test server whose connections
// record what the server writes.
type httpServer struct {
	srv *httptest.Server
	// client keeps its connection alive, as browsers and most clients do;
	// one closes a connection whose request was not over, which cancels
	// the request's context (and starts its slice) before the handler
	// returns.
	client *http.Client
	// fresh makes a connection per request, so that what one recorded is
	// one response.
	fresh  *http.Client
	probes chan *Probe
}

// serve starts the service. With late, a connection holds back what the
// server writes once its handler has returned until a slice has started
// (or 5 s have passed): a response still unwritten when net/http starts
// the slice is then sure to be missing when the slice starts. With h2 it
// is served on HTTP/2, over TLS (a connection then records the encrypted
// bytes).
func (h HTTPHost) serve(t *testing.T, s Setup, late, h2 bool) *httpServer {
	t.Helper()
	handler := h.Handler(t, s)
	hs := &httpServer{probes: make(chan *Probe, 64)}
	hs.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, p := NewProbe(r.Context())
		r = r.WithContext(ctx)
		hs.probes <- p
		Outside(ctx, w, r)
		s.Around(func() { handler.ServeHTTP(w, r) })
		if c, ok := ctx.Value(connKey{}).(*wireConn); ok {
			c.returned.Store(true)
		}
	}))
	hs.srv.Listener = &wire{Listener: hs.srv.Listener, late: late}
	hs.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	transport := &http.Transport{}
	if h2 {
		hs.srv.EnableHTTP2 = true
		hs.srv.StartTLS()
		transport = hs.srv.Client().Transport.(*http.Transport).Clone()
	} else {
		hs.srv.Start()
	}
	t.Cleanup(hs.srv.Close)
	fresh := transport.Clone()
	fresh.DisableKeepAlives = true
	hs.client = &http.Client{Transport: transport, Timeout: 10 * time.Second}
	hs.fresh = &http.Client{Transport: fresh, Timeout: 10 * time.Second}
	t.Cleanup(hs.client.CloseIdleConnections)
	return hs
}

func (hs *httpServer) Call(t *testing.T, answer string, forged map[string]string) Reply {
	t.Helper()
	r, err := hs.get(hs.client, answer, forged)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// get is Call with client, for any goroutine.
func (hs *httpServer) get(client *http.Client, answer string, forged map[string]string) (Reply, error) {
	u := hs.srv.URL + "/" + answer
	if forged != nil {
		u += "?" + url.Values{"fast_exit": {"1"}, "worksteal": {"1"}, "recruit": {"1"}}.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return Reply{}, err
	}
	for k, v := range forged {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	resp.Header.Del("Date")
	resp.Header.Del("Connection") // a fresh client's, not the service's
	raw, err := httputil.DumpResponse(resp, true)
	if err != nil {
		return Reply{}, fmt.Errorf("GET /%s: %w", answer, err)
	}
	return Reply{Raw: string(raw), Status: resp.StatusCode, Probe: <-hs.probes}, nil
}

// wire is a listener whose connections record what the server writes.
type wire struct {
	net.Listener
	late bool
}

func (l *wire) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: c, late: l.late, started: make(chan struct{})}, nil
}

type wireConn struct {
	net.Conn
	late     bool
	returned atomic.Bool // the handler has returned
	started  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	written  []byte
}

func (c *wireConn) Write(p []byte) (int, error) {
	if c.late && c.returned.Load() {
		select {
		case <-c.started:
		case <-time.After(5 * time.Second):
		}
	}
	c.mu.Lock()
	c.written = append(c.written, p...)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// sent is what the server has written so far.
func (c *wireConn) sent() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.written)
}

// sliceStarted lets the writes held back go.
func (c *wireConn) sliceStarted() { c.once.Do(func() { close(c.started) }) }
