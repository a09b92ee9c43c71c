package faults_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	stealecho "github.com/worksteal/worksteal/middleware/echo"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// A stack is one web stack with worksteal's middleware: serve starts a
// loopback server whose every response is a fast exit, lending its
// requests to the recruiters (outermost first), and returns a client call
// that fails on anything but a success.
type stack struct {
	name  string
	serve func(t *testing.T, recs ...*recruiter.Recruiter) (request func(context.Context) error)
}

var stacks = []stack{
	{"net-http", serveHTTP},
	{"echo", serveEcho},
	{"grpc", serveGRPC},
}

// loadWorkers is how many clients of a stack send requests at once.
const loadWorkers = 4

func serveHTTP(t *testing.T, recs ...*recruiter.Recruiter) func(context.Context) error {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recruiter.MarkFastExit(r.Context()) // a cache hit
		_, _ = io.WriteString(w, "cached")
	})
	for _, rec := range slices.Backward(recs) {
		h = stealhttp.Middleware(rec)(h)
	}
	return httpClient(t, httptest.NewServer(h))
}

func serveEcho(t *testing.T, recs ...*recruiter.Recruiter) func(context.Context) error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	for _, rec := range recs {
		e.Use(stealecho.Middleware(rec))
	}
	e.GET("/", func(c echo.Context) error {
		recruiter.MarkFastExit(c.Request().Context())
		return c.String(http.StatusOK, "cached")
	})
	return httpClient(t, httptest.NewServer(e))
}

// httpClient returns the request of an HTTP stack; the server is closed in
// t.Cleanup (after the recruiters' shutdown is registered: cleanups run
// last-in first-out, so the server stops first).
func httpClient(t *testing.T, srv *httptest.Server) func(context.Context) error {
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loadWorkers}}
	t.Cleanup(client.CloseIdleConnections)
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		switch {
		case err != nil:
			return fmt.Errorf("read body: %w", err)
		case resp.StatusCode != http.StatusOK || string(body) != "cached":
			return fmt.Errorf("status %d, body %q", resp.StatusCode, body)
		}
		return nil
	}
}

// cachedHealth answers every Check as a cache hit.
type cachedHealth struct {
	healthpb.UnimplementedHealthServer
}

func (cachedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	recruiter.MarkFastExit(ctx)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func serveGRPC(t *testing.T, recs ...*recruiter.Recruiter) func(context.Context) error {
	var interceptors []grpc.UnaryServerInterceptor
	for _, rec := range recs {
		interceptors = append(interceptors, stealgrpc.UnaryServerInterceptor(rec))
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	healthpb.RegisterHealthServer(srv, cachedHealth{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	return func(ctx context.Context) error {
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("status %v", resp.GetStatus())
		}
		return nil
	}
}

// sample is one request of a load.
type sample struct {
	at      time.Time // sent
	latency time.Duration
	err     error
}

// load sends requests from loadWorkers clients, each one every interval,
// until stopped, and keeps every sample.
type load struct {
	mu      sync.Mutex
	samples []sample
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// startLoad begins sending; Stop ends it. Each request has 5s, far more
// than any healthy one needs, so a request that waited on Redis shows up
// as a latency, not as a client timeout.
func startLoad(t testing.TB, request func(context.Context) error, interval time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: cancel}
	for range loadWorkers {
		l.done.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				began := time.Now()
				err := request(rctx)
				rcancel()
				l.mu.Lock()
				l.samples = append(l.samples, sample{at: began, latency: time.Since(began), err: err})
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(l.Stop)
	return l
}

// Stop ends the load and waits for its requests in flight; idempotent.
func (l *load) Stop() {
	l.stop()
	l.done.Wait()
}

// window summarises the requests sent in [from, to).
type window struct {
	requests, failed int
	p99, max         time.Duration
	firstErr         error
}

func (l *load) window(from, to time.Time) window {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w window
	var lats []time.Duration
	for _, s := range l.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		w.requests++
		lats = append(lats, s.latency)
		if s.err != nil {
			w.failed++
			if w.firstErr == nil {
				w.firstErr = s.err
			}
		}
	}
	if len(lats) > 0 {
		slices.Sort(lats)
		w.p99, w.max = lats[(len(lats)-1)*99/100], lats[len(lats)-1]
	}
	return w
}

// all summarises every request sent.
func (l *load) all() window { return l.window(time.Time{}, time.Now().Add(time.Hour)) }

func (w window) String() string {
	return fmt.Sprintf("%d requests, %d failed, p99 %v, max %v", w.requests, w.failed, w.p99.Round(10*time.Microsecond), w.max.Round(10*time.Microsecond))
}
