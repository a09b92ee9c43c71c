package stealecho_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealecho "github.com/worksteal/worksteal/middleware/echov5"
	"github.com/worksteal/worksteal/recruiter"
)

var body = []byte("cached answer")

func cacheHit(c *echo.Context) error {
	recruiter.MarkFastExit(c.Request().Context())
	_, err := c.Response().Write(body)
	return err
}

// benchEcho is echo with mws and one route.
func benchEcho(mws ...echo.MiddlewareFunc) *echo.Echo {
	e := echo.New()
	e.Logger = slog.New(slog.DiscardHandler)
	e.Use(mws...)
	e.GET("/items/:id", cacheHit)
	return e
}

// passThrough is the least an echo middleware can be.
func passThrough(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error { return next(c) }
}

// BenchmarkMiddleware compares, per request through e.ServeHTTP, echo
// without middleware, with a pass-through middleware (echo's floor for any
// middleware), the middleware on a dismissed request (also as a handler
// alone) and on a drawn request that was not a fast exit (observed only);
// then, cold, a drawn fast exit handed to a background slice. (otelecho,
// the reference of the echo v4 module's benchmark, is for echo v4 only.)
func BenchmarkMiddleware(b *testing.B) {
	rig := stealtest.New(b, false)
	run := func(name string, e *echo.Echo) {
		b.Run(name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			b.ReportAllocs()
			for b.Loop() {
				e.ServeHTTP(w, r)
			}
		})
	}
	run("bare", benchEcho())
	run("pass-through", benchEcho(passThrough))
	rig.Dismiss()
	run("dismissed", benchEcho(stealecho.Middleware(rig.Rec)))
	// The handler alone, called on one context.
	handler := func(name string, h echo.HandlerFunc) {
		b.Run("handler/"+name, func(b *testing.B) {
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/items/7", nil), &discard{h: http.Header{}})
			b.ReportAllocs()
			for b.Loop() {
				_ = h(c)
			}
		})
	}
	handler("bare", cacheHit)
	handler("dismissed", stealecho.Middleware(rig.Rec)(cacheHit))
	rig.Draw()
	never := func(stealecho.Exit) bool { return false }
	run("drawn-observed", benchEcho(stealecho.MiddlewareWithConfig(stealecho.Config{Recruiter: rig.Rec, Classifier: never})))

	// Drawn requests are rare, so they meet a cold CPU; comparing them with
	// a hot loop would flatter the reference. Each "cold" iteration follows
	// a millisecond idle, outside the timing, as requests in a quiet
	// service do; "req-ns/op" is the request goroutine's time alone. The
	// drawn fast exit hands a real slice (lock, job, release on a real
	// Redis) to a goroutine, which the benchmark waits for, untimed.
	cold := func(name string, e *echo.Echo, drawn bool) {
		b.Run("cold/"+name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			var onRequest time.Duration
			for b.Loop() {
				rig.ForgetCoolOffs()
				// net/http cancels a request's context once the handler has
				// returned; a background slice waits for that.
				ctx, done := context.WithCancel(context.Background())
				req := r.WithContext(ctx)
				t0 := time.Now()
				e.ServeHTTP(w, req)
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
	cold("bare", benchEcho(), false)
	cold("drawn-fast-exit", benchEcho(stealecho.Middleware(rig.Rec)), true)
}
