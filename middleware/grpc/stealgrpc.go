package stealgrpc

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/recruiter"
)

// UnaryServerInterceptor returns a unary server interceptor that lends
// fast-exit RPCs to rec. Nil options are ignored; a nil rec panics here,
// at set-up, rather than on every RPC.
func UnaryServerInterceptor(rec *recruiter.Recruiter, opts ...Option) grpc.UnaryServerInterceptor {
	mustHave(rec)
	o := evaluateOptions(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		draw := rec.Draw()
		if !draw.Recruited() || !o.keep(ctx, info.FullMethod) {
			return handler(ctx, req)
		}
		return serveUnaryDrawn(ctx, draw, o.classifier, req, info, handler)
	}
}

// StreamServerInterceptor returns a stream server interceptor that lends
// fast-exit RPCs to rec. Nil options are ignored; a nil rec panics here.
func StreamServerInterceptor(rec *recruiter.Recruiter, opts ...Option) grpc.StreamServerInterceptor {
	mustHave(rec)
	o := evaluateOptions(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		draw := rec.Draw()
		if !draw.Recruited() || !o.keep(ss.Context(), info.FullMethod) {
			return handler(srv, ss)
		}
		return serveStreamDrawn(draw, o.classifier, srv, ss, info, handler)
	}
}

// serveUnaryDrawn observes a drawn unary RPC and hands its slice on after a
// fast exit. It is apart from the hot path so that the closure stays small.
func serveUnaryDrawn(ctx context.Context, draw recruiter.Draw, classify Classifier,
	req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	began := time.Now()
	ctx = draw.Context(ctx)
	resp, err := handler(ctx, req)
	exit := Exit{
		FullMethod: info.FullMethod,
		Request:    req,
		Code:       codeOf(ctx, err),
		Err:        err,
		Marked:     draw.Marked(ctx),
		Elapsed:    time.Since(began),
	}
	if err == nil {
		exit.Response = resp // gRPC sends no response with an error
	}
	if classify(exit) {
		draw.Enlist(ctx, nil)
	}
	return resp, err
}

// markedStream is a drawn stream: the handler's stream with the fast-exit
// marker in its context.
type markedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *markedStream) Context() context.Context { return s.ctx }

// serveStreamDrawn observes a drawn stream as serveUnaryDrawn does a
// unary RPC. For both, a background slice waits for the RPC's context to
// end: gRPC cancels it when it hands the RPC's status to the transport,
// after the response and after every interceptor has returned. Inline it
// runs before the interceptor returns (no flush): an interceptor cannot
// have a unary response, or a stream's status, sent before it returns.
func serveStreamDrawn(draw recruiter.Draw, classify Classifier,
	srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	began := time.Now()
	ctx := draw.Context(ss.Context())
	err := handler(srv, &markedStream{ServerStream: ss, ctx: ctx})
	exit := Exit{
		FullMethod: info.FullMethod,
		Code:       codeOf(ctx, err),
		Err:        err,
		Marked:     draw.Marked(ctx),
		Elapsed:    time.Since(began),
		Stream:     true,
	}
	if classify(exit) {
		draw.Enlist(ctx, nil)
	}
	return err
}

// codeOf is the code gRPC sends for a handler's outcome: a status error's
// own, a context error's (Canceled, DeadlineExceeded), else Unknown; for
// no error, OK, unless the RPC's context ended first: then its deadline
// or cancellation is what the client saw.
func codeOf(ctx context.Context, err error) codes.Code {
	if err == nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return status.FromContextError(ctxErr).Code()
		}
		return codes.OK
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return status.FromContextError(err).Code()
}

func mustHave(rec *recruiter.Recruiter) {
	if rec == nil {
		panic("stealgrpc: an interceptor needs a *recruiter.Recruiter, got nil")
	}
}
