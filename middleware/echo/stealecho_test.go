package stealecho_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echo"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func marked(c echo.Context) { recruiter.MarkFastExit(c.Request().Context()) }

// newEcho is a small service behind mws: each path is one kind of response.
func newEcho(mws ...echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.Logger.SetOutput(io.Discard) // echo logs the body it cannot write with a 304
	e.Use(mws...)
	e.GET("/hit", func(c echo.Context) error {
		marked(c)
		c.Response().Header().Set("X-Cache", "HIT")
		return c.String(http.StatusOK, "cached answer")
	})
	e.GET("/slow", func(c echo.Context) error {
		return c.String(http.StatusOK, "computed answer") // not marked: not a fast exit
	})
	e.GET("/empty", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	e.GET("/same", func(c echo.Context) error { return c.NoContent(http.StatusNotModified) })
	e.GET("/same-error", func(c echo.Context) error { return echo.NewHTTPError(http.StatusNotModified) })
	e.GET("/missing", func(c echo.Context) error {
		marked(c) // a cached "not found" is a fast exit too
		return echo.NewHTTPError(http.StatusNotFound, "no such item")
	})
	// Marked, then failed: the failure wins.
	e.GET("/fail", func(c echo.Context) error {
		marked(c)
		return c.String(http.StatusInternalServerError, "boom")
	})
	e.GET("/error", func(c echo.Context) error {
		marked(c)
		return errors.New("database down")
	})
	e.GET("/unavailable", func(c echo.Context) error {
		marked(c)
		return echo.NewHTTPError(http.StatusServiceUnavailable, "try later")
	})
	// Echo's error handler answers with the code of an *echo.HTTPError
	// wrapped as Internal: 304 here.
	e.GET("/wrapped", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusBadGateway, "upstream").WithInternal(echo.NewHTTPError(http.StatusNotModified))
	})
	e.GET("/late", func(c echo.Context) error {
		marked(c)
		if err := c.String(http.StatusOK, "partial"); err != nil {
			return err
		}
		return errors.New("failed after the response was written")
	})
	return e
}

var allPaths = []string{"/hit", "/slow", "/empty", "/same", "/same-error", "/missing", "/fail", "/error", "/unavailable", "/wrapped", "/late"}

func TestDismissedRequestIsUntouched(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var sameRequest, sameWriter atomic.Bool
	var outerReq atomic.Pointer[http.Request]
	var outerWriter atomic.Value
	recordOuter := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			outerReq.Store(c.Request())
			outerWriter.Store(c.Response().Writer)
			return next(c)
		}
	}
	checkInner := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			sameRequest.Store(c.Request() == outerReq.Load())
			sameWriter.Store(c.Response().Writer == outerWriter.Load())
			return next(c)
		}
	}
	with := stealtest.Serve(t, rig.Wrap(newEcho(recordOuter, stealecho.Middleware(rig.Rec), checkInner)))
	without := stealtest.Serve(t, newEcho())
	for _, path := range allPaths {
		sameRequest.Store(false)
		sameWriter.Store(false)
		if a, b := stealtest.Get(t, with.URL+path, nil), stealtest.Get(t, without.URL+path, nil); a != b {
			t.Errorf("%s differs with the middleware:\n%s\nwithout:\n%s", path, a, b)
		}
		if !sameRequest.Load() || !sameWriter.Load() {
			t.Errorf("%s: the chain went on with another request (%v) or ResponseWriter (%v)", path, !sameRequest.Load(), !sameWriter.Load())
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed requests", n)
	}
}

// TestDismissedRequestAllocatesNothing: the middleware's handler allocates
// nothing on a dismissed request, and through echo a dismissed request
// costs what a middleware that only calls next costs (echo allocates each
// middleware's handler per request). Not parallel: AllocsPerRun counts
// the whole process's allocations, and refuses to run in a parallel test.
func TestDismissedRequestAllocatesNothing(t *testing.T) {
	rig := stealtest.New(t, false)
	var skipperCalls atomic.Int32
	mw := stealecho.MiddlewareWithConfig(stealecho.Config{
		Recruiter: rig.Rec,
		Skipper:   func(echo.Context) bool { skipperCalls.Add(1); return false },
	})
	handler := func(c echo.Context) error { marked(c); return nil }
	h := mw(handler)
	e := echo.New()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/items/7", nil), &discard{h: http.Header{}})
	if n := testing.AllocsPerRun(1000, func() { _ = h(c) }); n != 0 {
		t.Errorf("a dismissed request allocates %v times in the middleware, want 0", n)
	}

	through := func(mws ...echo.MiddlewareFunc) float64 {
		e := echo.New()
		e.Use(mws...)
		e.GET("/items/:id", handler)
		w, r := &discard{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/items/7", nil)
		return testing.AllocsPerRun(1000, func() { e.ServeHTTP(w, r) })
	}
	passThrough := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return next(c) }
	}
	bare, reference, dismissed := through(), through(passThrough), through(mw)
	switch {
	case raceEnabled:
		t.Logf("allocations through echo (bare %v, pass-through %v, dismissed %v) are not compared under the race detector", bare, reference, dismissed)
	case dismissed != reference || reference != bare+1:
		t.Errorf("allocations per request through echo: bare %v, a pass-through middleware %v, dismissed %v; want bare+1 for both", bare, reference, dismissed)
	}

	if n := skipperCalls.Load(); n != 0 {
		t.Errorf("the Skipper was consulted %d times on dismissed requests, want 0", n)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed requests", n)
	}
}

func TestDrawnRequests(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := stealtest.Serve(t, rig.Wrap(newEcho(stealecho.Middleware(rig.Rec))))
	without := stealtest.Serve(t, newEcho())
	rig.Draw()
	for _, tc := range []struct {
		path string
		runs int
	}{
		{"/hit", 1}, {"/empty", 1}, {"/same", 1}, {"/same-error", 1}, {"/wrapped", 1}, {"/missing", 1},
		{"/slow", 0}, {"/fail", 0}, {"/error", 0}, {"/unavailable", 0}, {"/late", 0},
	} {
		before := rig.Started()
		if a, b := stealtest.Get(t, srv.URL+tc.path, nil), stealtest.Get(t, without.URL+tc.path, nil); a != b {
			t.Errorf("drawn %s differs from the bare service's:\n%s\nwant:\n%s", tc.path, a, b)
		}
		rig.Settle(t)
		if got := rig.Started() - before; got != tc.runs {
			t.Errorf("drawn %s ran %d slices, want %d", tc.path, got, tc.runs)
		}
		rig.ForgetCoolOffs()
	}
}

// TestSliceLinksToTheRequestSpan: with otelecho before the middleware, the
// recruitment span links to the request's span.
func TestSliceLinksToTheRequestSpan(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var requestSpan atomic.Value
	e := echo.New()
	e.Use(otelecho.Middleware("catalog",
		otelecho.WithTracerProvider(rig.Tracer), otelecho.WithPropagators(propagation.TraceContext{})))
	e.Use(stealecho.Middleware(rig.Rec))
	e.GET("/items/:id", func(c echo.Context) error {
		requestSpan.Store(trace.SpanContextFromContext(c.Request().Context()))
		marked(c)
		return c.String(http.StatusOK, "cached answer")
	})
	srv := stealtest.Serve(t, rig.Wrap(e))
	rig.Draw()
	stealtest.Get(t, srv.URL+"/items/7", nil)
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
// echo is done with the request (its error handler included), and a job
// that sleeps past its budget, panics or fails changes nothing the client
// sees.
func TestBackgroundSliceStartsAfterTheResponse(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	var echoDone atomic.Bool
	e := newEcho(stealecho.Middleware(rig.Rec))
	srv := stealtest.Serve(t, rig.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoDone.Store(false)
		e.ServeHTTP(w, r)
		// Hold the request open: a slice that did not wait for its end
		// would start in this window (its lock is a Redis round trip away).
		time.Sleep(20 * time.Millisecond)
		echoDone.Store(true)
	})))
	without := stealtest.Serve(t, newEcho())
	rig.Draw()
	jobs := []struct {
		does string
		run  func(context.Context) (recruiter.Report, error)
	}{
		{"sleeps past its budget", func(ctx context.Context) (recruiter.Report, error) {
			time.Sleep(150 * time.Millisecond)
			return recruiter.Report{}, nil
		}},
		{"panics", func(context.Context) (recruiter.Report, error) { panic("stolen work broke") }},
		{"fails", func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, errors.New("no") }},
	}
	for _, job := range jobs {
		var early atomic.Bool // read when the slice starts, not when the test looks
		rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
			early.Store(!echoDone.Load())
			return job.run(ctx)
		})
		for _, path := range []string{"/hit", "/same-error"} {
			rig.ForgetCoolOffs() // each of these jobs rests after its slice
			want := stealtest.Get(t, without.URL+path, nil)
			if got := stealtest.Get(t, srv.URL+path, nil); got != want {
				t.Errorf("%s, with a job that %s: the response is\n%s\nwant\n%s", path, job.does, got, want)
			}
			rig.NextRun(t)
			rig.Settle(t)
			if early.Load() {
				t.Errorf("%s: a slice (job that %s) started before echo was done with the request", path, job.does)
			}
		}
	}
	js := rig.Rec.Stats().Jobs[0]
	if js.Timeouts != 2 || js.Panics != 2 || js.Errors != 2 {
		t.Fatalf("stats %+v, want two timeouts, two panics, two errors", js)
	}
}

// TestClientsCannotForceRecruitment: no header, query or method makes a
// request recruited or a fast exit.
func TestClientsCannotForceRecruitment(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := stealtest.Serve(t, rig.Wrap(newEcho(stealecho.Middleware(rig.Rec))))
	forged := http.Header{
		"X-Worksteal":            {"1"},
		"X-Fast-Exit":            {"true"},
		"Worksteal-Recruit":      {"stolen"},
		"If-None-Match":          {"*"},
		"If-Modified-Since":      {"Mon, 02 Jan 2006 15:04:05 GMT"},
		"Cache-Control":          {"only-if-cached"},
		"Traceparent":            {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"X-Forwarded-For":        {"127.0.0.1"},
		"X-Worksteal-Fast-Exit":  {"1"},
		"X-Http-Method-Override": {"HEAD"},
	}
	for _, drawn := range []bool{false, true} {
		if drawn {
			rig.Draw()
		} else {
			rig.Dismiss()
		}
		for _, path := range []string{"/slow?fast_exit=1&worksteal=1", "/fail?recruit=1", "/error?status=304", "/unavailable?marked=1"} {
			stealtest.Get(t, srv.URL+path, forged)
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("forged requests ran %d slices", n)
	}
}

// discard is a ResponseWriter that keeps nothing and cannot flush.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
