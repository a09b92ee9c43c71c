package adaptertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/recruiter"
)

// Answer is one kind of response of a host's service.
type Answer struct {
	// Name names the answer to the host: a path without its slash (HTTP),
	// a service name (gRPC).
	Name string
	// Marked: the handler calls recruiter.MarkFastExit.
	Marked bool
	// Runs is how many slices a drawn request for it runs under the
	// adapter's default classifier: 1 for a fast exit, else 0.
	Runs int
	// Typical answers are those the suite uses where one of each way of
	// answering is enough (span links, failing jobs, nesting): a cached
	// answer, and a cached answer that the framework writes after the
	// handler (echo's error handler) or sends as a stream (gRPC).
	Typical bool
}

// Setup is how the suite wants a host's service served.
type Setup struct {
	// Recruiters are those of the adapters around the service, the first
	// outermost; with none, the service is served bare, without adapter.
	Recruiters []*recruiter.Recruiter
	// Classify, if not nil, is every adapter's classifier: the host hands
	// it what its classifier is given.
	Classify func(Seen) bool
	// Tracer, if not nil, is the provider of a tracing layer outside the
	// adapters that starts a server span for each request (otelhttp,
	// otelecho, otelgrpc's stats handler, or one like them).
	Tracer trace.TracerProvider
	// Around is the outermost layer: the serving of each request, tracing
	// and adapters included, runs inside a call of it. The suite sets it;
	// an HTTPHost's service is wrapped in it by the suite itself.
	Around func(serve func())
}

// Seen is what a classifier was given, as the suite compares it.
type Seen struct {
	Answer  string        // the answer's name
	Status  int           // the HTTP status, or the gRPC code
	Marked  bool          // the handler marked a fast exit
	Elapsed time.Duration // from the draw to the handler's return
}

// Reply is what a client saw of one request, and what its handler saw.
type Reply struct {
	// Raw is everything the client saw (status, headers but Date, body;
	// or messages, code, message, metadata), to compare across servers.
	Raw string
	// Status is the HTTP status or gRPC code the client received.
	Status int
	// Probe is what the service's layers reported of the request.
	Probe *Probe
}

// Host is an adapter's glue.
type Host interface {
	// Answers are every answer the service gives.
	Answers() []Answer
	// Serve starts the service as s says, until the test's end, and
	// returns a client of it.
	Serve(t *testing.T, s Setup) Client
}

// Client calls a host's service.
type Client interface {
	// Call makes one request for the answer, with forged (if not nil) as
	// request headers or metadata, and returns what was seen. A client
	// may call it from several goroutines, one request at a time.
	Call(t *testing.T, answer string, forged map[string]string) Reply
}

// Probe is what the layers of a service report of one request: the host
// makes one per request with [NewProbe] in its outermost layer, which
// calls [Outside]; the handler calls [Inside].
type Probe struct {
	mu      sync.Mutex
	outside []any
	inside  []any
	span    trace.SpanContext
}

type probeKey struct{}

// NewProbe returns ctx with a new Probe, and the Probe.
func NewProbe(ctx context.Context) (context.Context, *Probe) {
	p := &Probe{}
	return context.WithValue(ctx, probeKey{}, p), p
}

// Outside records what the layer outside the adapters passes on (the
// writer and request, the context and stream...).
func Outside(ctx context.Context, passed ...any) {
	if p, ok := ctx.Value(probeKey{}).(*Probe); ok {
		p.mu.Lock()
		p.outside = passed
		p.mu.Unlock()
	}
}

// Inside records what the handler got, in the order Outside was given
// it, and the span on its context.
func Inside(ctx context.Context, got ...any) {
	if p, ok := ctx.Value(probeKey{}).(*Probe); ok {
		p.mu.Lock()
		p.inside = got
		p.span = trace.SpanContextFromContext(ctx)
		p.mu.Unlock()
	}
}

// Untouched reports whether the handler got what the outside passed on.
func (p *Probe) Untouched() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.outside) == 0 || len(p.outside) != len(p.inside) {
		return false
	}
	for i := range p.outside {
		if p.outside[i] != p.inside[i] {
			return false
		}
	}
	return true
}

// Span is the span context on the handler's context.
func (p *Probe) Span() trace.SpanContext {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.span
}
