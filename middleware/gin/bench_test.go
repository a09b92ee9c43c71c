package stealgin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgin "github.com/worksteal/worksteal/middleware/gin"
	"github.com/worksteal/worksteal/recruiter"
)

var body = []byte("cached answer")

func cacheHit(c *gin.Context) {
	recruiter.MarkFastExit(c.Request.Context())
	c.Writer.Write(body)
}

// benchGin is gin with mws and one route.
func benchGin(mws ...gin.HandlerFunc) *gin.Engine {
	r := gin.New()
	r.Use(mws...)
	r.GET("/items/:id", cacheHit)
	return r
}

// otelginNoop is otelgin with no-op tracer and meter providers, the
// overhead a Go team already accepts.
func otelginNoop() gin.HandlerFunc {
	return otelgin.Middleware("items",
		otelgin.WithTracerProvider(tracenoop.NewTracerProvider()), otelgin.WithMeterProvider(metricnoop.NewMeterProvider()))
}

// passThrough is the least a gin middleware can be.
func passThrough(c *gin.Context) { c.Next() }

// BenchmarkMiddleware compares, per request through r.ServeHTTP, gin
// without middleware, with a pass-through middleware, the middleware on
// a dismissed request (also as a handler alone), on a drawn request that
// was not a fast exit (observed only), and otelgin with no-op providers
// as the reference; then, cold, a drawn fast exit handed to a background
// slice.
func BenchmarkMiddleware(b *testing.B) {
	rig := stealtest.New(b, false)
	run := func(name string, r *gin.Engine) {
		b.Run(name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			req := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			b.ReportAllocs()
			for b.Loop() {
				r.ServeHTTP(w, req)
			}
		})
	}
	run("bare", benchGin())
	run("pass-through", benchGin(passThrough))
	rig.Dismiss()
	run("dismissed", benchGin(stealgin.Middleware(rig.Rec)))
	// The middleware's handler alone, on one context with no further
	// handler: the draw and c.Next() (c.Abort() resets the handler index
	// that c.Next() moves on, which gin does per request).
	handler := func(name string, h gin.HandlerFunc) {
		b.Run("handler/"+name, func(b *testing.B) {
			c, _ := gin.CreateTestContext(&discard{h: http.Header{}})
			c.Request = httptest.NewRequest(http.MethodGet, "/items/7", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.Abort()
				h(c)
			}
		})
	}
	handler("pass-through", passThrough)
	handler("dismissed", stealgin.Middleware(rig.Rec))
	run("otelgin-noop", benchGin(otelginNoop()))
	rig.Draw()
	never := func(stealgin.Exit) bool { return false }
	run("drawn-observed", benchGin(stealgin.MiddlewareWithConfig(stealgin.Config{Recruiter: rig.Rec, Classifier: never})))

	// Drawn requests are rare, so they meet a cold CPU; comparing them with
	// a hot loop would flatter the reference. Each "cold" iteration follows
	// a millisecond idle, outside the timing, as requests in a quiet
	// service do; "req-ns/op" is the request goroutine's time alone. The
	// drawn fast exit hands a real slice (lock, job, release on a real
	// Redis) to a goroutine, which the benchmark waits for, untimed.
	cold := func(name string, r *gin.Engine, drawn bool) {
		b.Run("cold/"+name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			req := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			var onRequest time.Duration
			for b.Loop() {
				rig.ForgetCoolOffs()
				// net/http cancels a request's context once the handler has
				// returned; a background slice waits for that.
				ctx, done := context.WithCancel(context.Background())
				t0 := time.Now()
				r.ServeHTTP(w, req.WithContext(ctx))
				onRequest += time.Since(t0)
				done()
				if drawn {
					rig.NextRun(b)
					rig.Settle(b)
				} else {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(onRequest.Nanoseconds())/float64(b.N), "req-ns/op")
		})
	}
	cold("bare", benchGin(), false)
	cold("otelgin-noop", benchGin(otelginNoop()), false)
	cold("drawn-fast-exit", benchGin(stealgin.Middleware(rig.Rec)), true)
}
