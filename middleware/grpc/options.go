package stealgrpc

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
)

// Exit is what a classifier knows of a drawn RPC once its handler has
// returned.
type Exit struct {
	FullMethod string // "/package.Service/Method"
	Request    any    // the request message; nil for a stream
	Response   any    // the response message; nil for a stream or after an error
	// Code is the code the client receives, as the interceptor can know it
	// when the handler has returned (the package doc, "The code"): the
	// RPC's end if its context ended first (DeadlineExceeded once its
	// deadline has passed, else Canceled); for a stream whose SendMsg
	// failed, that failure's code, which gRPC ended the RPC with; for a
	// unary response that does not marshal, Internal, which gRPC then
	// answers; else the handler's error's code (Unknown for an error that
	// is no status, OK for none).
	Code    codes.Code
	Err     error         // the handler's error, as returned
	Marked  bool          // the handler called recruiter.MarkFastExit
	Elapsed time.Duration // from the draw to the handler's return
	Stream  bool          // a streaming RPC (StreamServerInterceptor)
}

// A Classifier decides whether a drawn RPC was a fast exit, which hands
// its slice to the recruiter.
type Classifier func(Exit) bool

// DefaultClassifier: the handler marked a fast exit (recruiter.MarkFastExit)
// and the RPC did not end with a code that means the server failed or was
// cut off: Unknown, DeadlineExceeded, Unimplemented, Internal, Unavailable,
// DataLoss (gRPC's 5xx, as otelgrpc counts server errors) or Canceled,
// nor with a code gRPC does not define.
// OK, NotFound, InvalidArgument and the other answers to the client's own
// request count: an empty result is as cheap as a cache hit.
func DefaultClassifier(e Exit) bool {
	if !e.Marked || e.Code > codes.Unauthenticated {
		return false
	}
	switch e.Code {
	case codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented, codes.Internal,
		codes.Unavailable, codes.DataLoss, codes.Canceled:
		return false
	}
	return true
}

// Option configures [UnaryServerInterceptor] and [StreamServerInterceptor].
type Option interface{ apply(*options) }

type options struct {
	classifier Classifier
	filters    []func(ctx context.Context, fullMethod string) bool
}

// keep reports whether every filter keeps the RPC.
func (o *options) keep(ctx context.Context, fullMethod string) bool {
	for _, f := range o.filters {
		if !f(ctx, fullMethod) {
			return false
		}
	}
	return true
}

var defaultOptions = options{classifier: DefaultClassifier}

func evaluateOptions(opts []Option) options {
	o := defaultOptions
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClassifier replaces [DefaultClassifier]; nil keeps the default.
func WithClassifier(c Classifier) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.classifier = c
		}
	})
}

// WithFilter excludes RPCs from recruitment: only RPCs for which every
// filter returns true may run a slice (filters add up); a nil filter is
// ignored. Filters are consulted after the draw, so dismissed RPCs never
// pay for them; the effective rate of a job is its rate times the share of
// RPCs the filters keep. ctx is the RPC's context, with its incoming
// metadata, peer and deadline.
func WithFilter(filter func(ctx context.Context, fullMethod string) bool) Option {
	return optionFunc(func(o *options) {
		if filter != nil {
			o.filters = append(o.filters, filter)
		}
	})
}
