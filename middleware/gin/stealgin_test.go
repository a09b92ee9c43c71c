package stealgin_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/propagation"
	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/internal/testing/adaptertest"
	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgin "github.com/worksteal/worksteal/middleware/gin"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode) // no route listing or debug warnings in the test output
	goleak.VerifyTestMain(m)
}

// TestConformance runs the adapters' suite on the middleware.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.ExerciseHTTP(t, adaptertest.HTTPHost{Extra: extra, Handler: service})
}

// extra are the answers of gin's own: statuses that gin writes after the
// chain, errors attached with c.Error, and gin's 404.
var extra = []adaptertest.Answer{
	{Name: "unchanged", Marked: true, Runs: 1, Typical: true}, // a marked c.Status(304): gin writes it after the chain
	{Name: "aborted", Marked: true},                           // c.AbortWithStatus(503), written after the chain
	{Name: "reported", Marked: true},                          // a 200 written with an error attached: failed
	{Name: "nowhere"},                                         // no such route: gin's own 404 page
}

// service is the suite's service on gin, behind one middleware per
// recruiter of s (the first outermost), inside otelgin when s traces.
func service(_ *testing.T, s adaptertest.Setup) http.Handler {
	r := gin.New()
	if s.Tracer != nil {
		r.Use(otelgin.Middleware("catalog", otelgin.WithTracerProvider(s.Tracer), otelgin.WithPropagators(propagation.TraceContext{})))
	}
	cfg := stealgin.Config{}
	if s.Classify != nil {
		cfg.Classifier = func(x stealgin.Exit) bool {
			return s.Classify(adaptertest.Seen{
				Answer: strings.TrimPrefix(x.Context.Request.URL.Path, "/"), Status: x.Status, Marked: x.Marked, Elapsed: x.Elapsed,
			})
		}
	}
	for _, rec := range s.Recruiters {
		cfg.Recruiter = rec
		r.Use(stealgin.MiddlewareWithConfig(cfg))
	}
	r.Use(func(c *gin.Context) {
		adaptertest.Inside(c.Request.Context(), below(c), c.Request)
		c.Next()
	})
	routes(r)
	return r
}

// below is the ResponseWriter under gin's writer.
func below(c *gin.Context) http.ResponseWriter {
	return c.Writer.(interface{ Unwrap() http.ResponseWriter }).Unwrap()
}

func marked(c *gin.Context) { recruiter.MarkFastExit(c.Request.Context()) }

// routes answers adaptertest.HTTPAnswers and extra.
func routes(r gin.IRoutes) {
	r.GET("/hit", func(c *gin.Context) {
		marked(c)
		c.Header("X-Cache", "HIT")
		c.String(http.StatusOK, "cached answer")
	})
	r.GET("/slow", func(c *gin.Context) { c.String(http.StatusOK, "computed answer") })
	r.GET("/fail", func(c *gin.Context) {
		marked(c)
		c.String(http.StatusInternalServerError, "boom")
	})
	r.GET("/missing", func(c *gin.Context) {
		marked(c)
		c.String(http.StatusNotFound, "no such item")
	})
	r.GET("/empty", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	r.GET("/same", func(c *gin.Context) { c.Writer.WriteHeader(http.StatusNotModified); c.Writer.WriteHeaderNow() })
	r.GET("/sized", func(c *gin.Context) {
		marked(c)
		c.Header("Content-Length", "5")
		c.String(http.StatusOK, "hello")
	})
	r.GET("/large", func(c *gin.Context) {
		marked(c)
		c.String(http.StatusOK, adaptertest.LargeBody)
	})
	r.GET("/streamed", func(c *gin.Context) {
		marked(c)
		c.Writer.WriteString("part 1\n")
		c.Writer.Flush()
		c.Writer.WriteString("part 2\n")
	})
	r.GET("/unchanged", func(c *gin.Context) {
		marked(c)
		c.Header("ETag", `"v1"`)
		c.Status(http.StatusNotModified)
	})
	r.GET("/aborted", func(c *gin.Context) {
		marked(c)
		c.AbortWithStatus(http.StatusServiceUnavailable)
	})
	r.GET("/reported", func(c *gin.Context) {
		marked(c)
		_ = c.Error(errors.New("the cache answered, the audit write failed"))
		c.String(http.StatusOK, "cached answer")
	})
}

// TestDismissedRequestAllocatesNothing: the middleware's handler
// allocates nothing on a dismissed request, and through gin a dismissed
// request costs what a request without the middleware costs (gin builds
// a route's chain once). Not parallel: AllocsPerRun counts the whole
// process's allocations, and refuses to run in a parallel test.
func TestDismissedRequestAllocatesNothing(t *testing.T) {
	rig := stealtest.New(t, false)
	var skipperCalls atomic.Int32
	mw := stealgin.MiddlewareWithConfig(stealgin.Config{
		Recruiter: rig.Rec,
		Skipper:   func(*gin.Context) bool { skipperCalls.Add(1); return false },
	})
	c, _ := gin.CreateTestContext(&discard{h: http.Header{}})
	c.Request = httptest.NewRequest(http.MethodGet, "/items/7", nil)
	if n := testing.AllocsPerRun(1000, func() { c.Abort(); mw(c) }); n != 0 { // Abort resets gin's handler index, which c.Next() moves on
		t.Errorf("a dismissed request allocates %v times in the middleware, want 0", n)
	}

	through := func(mws ...gin.HandlerFunc) float64 {
		r := benchGin(mws...)
		w, req := &discard{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/items/7", nil)
		return testing.AllocsPerRun(1000, func() { r.ServeHTTP(w, req) })
	}
	bare, dismissed := through(), through(mw)
	switch {
	case raceEnabled:
		t.Logf("allocations through gin (bare %v, dismissed %v) are not compared under the race detector", bare, dismissed)
	case dismissed != bare:
		t.Errorf("allocations per request through gin: bare %v, dismissed %v; want the same", bare, dismissed)
	}

	if n := skipperCalls.Load(); n != 0 {
		t.Errorf("the Skipper was consulted %d times on dismissed requests, want 0", n)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed requests", n)
	}
}

// discard is a ResponseWriter that keeps nothing and cannot flush.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// quietRecovery is gin.Recovery without its log of the stack.
func quietRecovery() gin.HandlerFunc { return gin.RecoveryWithWriter(io.Discard) }
