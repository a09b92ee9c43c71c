package main

// The net/http middleware's benchmark lives here, beside the fleet
// benchmark, because it measures the middleware against otelhttp, which
// the root module does not require.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealhttp "github.com/worksteal/worksteal/middleware/http"
	"github.com/worksteal/worksteal/recruiter"
)

// discard is a ResponseWriter that keeps nothing, so that the benchmarks
// measure the middleware, not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

var body = []byte("cached answer")

func cacheHit(w http.ResponseWriter, r *http.Request) {
	recruiter.MarkFastExit(r.Context())
	w.Write(body)
}

// BenchmarkStealHTTP compares, per request, the bare handler, the
// middleware on a dismissed request, on a drawn request that was not a
// fast exit (observed only), on a drawn fast exit handed to a background
// slice, and otelhttp with no-op providers as the reference.
func BenchmarkStealHTTP(b *testing.B) {
	rig := stealtest.New(b, false)
	run := func(name string, h http.Handler) {
		b.Run(name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
	run("bare", http.HandlerFunc(cacheHit))
	rig.Dismiss()
	run("dismissed", stealhttp.Middleware(rig.Rec)(http.HandlerFunc(cacheHit)))
	run("otelhttp-noop", otelhttp.NewHandler(http.HandlerFunc(cacheHit), "items",
		otelhttp.WithTracerProvider(tracenoop.NewTracerProvider()), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider())))
	rig.Draw()
	never := stealhttp.WithClassifier(func(stealhttp.Exit) bool { return false })
	run("drawn-observed", stealhttp.Middleware(rig.Rec, never)(http.HandlerFunc(cacheHit)))

	// Drawn requests are rare, so they meet a cold CPU; comparing them with
	// a hot loop would flatter the reference. Each "cold" iteration follows
	// a millisecond idle, outside the timing, as requests in a quiet
	// service do; "req-ns/op" is the request goroutine's time alone. The
	// drawn fast exit hands a real slice (lock, job, release on a real
	// Redis) to a goroutine, which the benchmark waits for, untimed.
	cold := func(name string, h http.Handler, drawn bool) {
		b.Run("cold/"+name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, "/items/7", nil)
			var onRequest time.Duration
			for b.Loop() {
				rig.ForgetCoolOffs()
				// net/http cancels a request's context when its handler
				// returns; a background slice waits for that.
				ctx, done := context.WithCancel(context.Background())
				req := r.WithContext(ctx)
				t0 := time.Now()
				h.ServeHTTP(w, req)
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
	cold("bare", http.HandlerFunc(cacheHit), false)
	cold("otelhttp-noop", otelhttp.NewHandler(http.HandlerFunc(cacheHit), "items",
		otelhttp.WithTracerProvider(tracenoop.NewTracerProvider()), otelhttp.WithMeterProvider(metricnoop.NewMeterProvider())), false)
	cold("drawn-fast-exit", stealhttp.Middleware(rig.Rec)(http.HandlerFunc(cacheHit)), true)
}
