// Package stealtest is the test rig of the middleware packages: a
// recruiter on a throw-away Redis whose roll the test sets, one recording
// job whose behaviour the test sets, and spans recorded in memory.
package stealtest

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/telemetry"
)

// JobName is the rig's one job.
const JobName = "stolen"

// Rig is a recruiter with one job, for middleware tests.
type Rig struct {
	Rec    *recruiter.Recruiter
	Tracer *sdktrace.TracerProvider // give it to otelhttp/otelgrpc/otelecho to link request spans
	Spans  *tracetest.SpanRecorder

	roll    atomic.Uint64 // math.Float64bits of the next rolls
	skew    atomic.Int64  // added to the recruiter's clock by ForgetCoolOffs
	job     atomic.Pointer[func(context.Context) (recruiter.Report, error)]
	runs    chan Run
	started atomic.Int32
	served  sync.WaitGroup
}

// Run is one slice the job started.
type Run struct {
	Ctx context.Context
	At  time.Time
}

// New starts a Redis and a recruiter on it; inline selects Config.Inline.
// The roll starts dismissed.
func New(t testing.TB, inline bool) *Rig {
	t.Helper()
	rig := &Rig{Spans: tracetest.NewSpanRecorder(), runs: make(chan Run, 1024)}
	rig.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rig.Spans))
	rig.Dismiss()
	rig.SetJob(func(context.Context) (recruiter.Report, error) { return recruiter.Report{Items: 1, More: true}, nil })
	rdb := redistest.Start(t).Client(t)
	cfg := recruiter.Config{
		Inline:         inline,
		Prefix:         "stealtest",
		TracerProvider: rig.Tracer,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The middleware is under test, not the pressure gate: on a busy
		// machine the gate would hold slices back for up to 10 s.
		Pressure: -1,
	}
	seams.SetRoll(&cfg,
		func() float64 { return math.Float64frombits(rig.roll.Load()) },
		func() time.Time { return time.Now().Add(time.Duration(rig.skew.Load())) })
	rec, err := recruiter.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = rec.Register(recruiter.Func(JobName, func(ctx context.Context) (recruiter.Report, error) {
		rig.started.Add(1)
		rig.runs <- Run{Ctx: ctx, At: time.Now()}
		return (*rig.job.Load())(ctx)
	}), recruiter.JobConfig{Rate: 0.5, Budget: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rig.Rec = rec
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		_ = rig.Tracer.Shutdown(context.Background())
	})
	return rig
}

// Draw makes every following roll draw the job; Dismiss makes them miss.
func (r *Rig) Draw()    { r.roll.Store(math.Float64bits(0)) }
func (r *Rig) Dismiss() { r.roll.Store(math.Float64bits(0.99)) }

// ForgetCoolOffs moves the recruiter's clock an hour on, past any local
// cool-off or rest, so that the next drawn request can run a slice.
func (r *Rig) ForgetCoolOffs() { r.skew.Add(int64(time.Hour)) }

// SetJob sets what the job does in its slices.
func (r *Rig) SetJob(run func(context.Context) (recruiter.Report, error)) { r.job.Store(&run) }

// Wrap is the outermost handler of a test server: with it, Settle knows
// when the server has finished with every request.
func (r *Rig) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.served.Add(1)
		defer r.served.Done()
		h.ServeHTTP(w, req)
	})
}

// Settle waits until the handlers wrapped by Wrap have returned and no
// slice is in flight, so that counting runs afterwards is final.
func (r *Rig) Settle(t testing.TB) {
	t.Helper()
	r.served.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for r.Rec.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a slice is still in flight after 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Started is how many slices the job has started.
func (r *Rig) Started() int { return int(r.started.Load()) }

// NextRun waits for the next slice to start.
func (r *Rig) NextRun(t testing.TB) Run {
	t.Helper()
	select {
	case run := <-r.runs:
		return run
	case <-time.After(5 * time.Second):
		t.Fatal("no slice started within 5s")
		return Run{}
	}
}

// RecruitSpans returns the ended recruitment spans.
func (r *Rig) RecruitSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.Spans.Ended() {
		if s.Name() == telemetry.SpanRecruit {
			out = append(out, s)
		}
	}
	return out
}

// LinkedTo reports whether span links to the span context sc.
func LinkedTo(span sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range span.Links() {
		if l.SpanContext.SpanID() == sc.SpanID() && l.SpanContext.TraceID() == sc.TraceID() {
			return true
		}
	}
	return false
}

// Serve serves h on a test server closed at cleanup.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Get returns the raw response to a GET of url (status line, headers but
// Date, body), for byte-for-byte comparisons.
func Get(t testing.TB, url string, header http.Header) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	resp.Header.Del("Date")
	raw, err := httputil.DumpResponse(resp, true)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// ServeInline serves handler(rig), rig being in inline mode with a job
// that blocks until release is closed (at cleanup at the latest).
func ServeInline(t testing.TB, handler func(*Rig) http.Handler) (rig *Rig, srv *httptest.Server, release chan struct{}) {
	t.Helper()
	rig = New(t, true)
	release = make(chan struct{})
	rig.SetJob(func(context.Context) (recruiter.Report, error) {
		<-release
		return recruiter.Report{}, nil
	})
	srv = Serve(t, rig.Wrap(handler(rig)))
	// Cleanups run last in first: a failed test frees its slice before the
	// server waits for the request that runs it.
	t.Cleanup(func() { close(release) })
	return rig, srv, release
}
