package stealgrpc

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
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
	sendErr := err
	if err == nil && ctx.Err() == nil && !marshals(ctx, resp) {
		// gRPC will answer Internal, having failed to marshal it.
		sendErr = status.Error(codes.Internal, "stealgrpc: the response does not marshal")
	}
	exit := Exit{
		FullMethod: info.FullMethod,
		Request:    req,
		Code:       codeOf(ctx, sendErr),
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
// marker in its context. It keeps the first error of SendMsg: gRPC then
// ends the RPC with that error's status at once, whatever the handler
// returns afterwards.
type markedStream struct {
	grpc.ServerStream
	ctx     context.Context
	sendErr error
}

func (s *markedStream) Context() context.Context { return s.ctx }

func (s *markedStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err != nil && s.sendErr == nil && !errors.Is(err, io.EOF) {
		s.sendErr = err
	}
	return err
}

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
	ms := &markedStream{ServerStream: ss, ctx: ctx}
	err := handler(srv, ms)
	code := codeOf(ctx, err)
	if ms.sendErr != nil {
		code = errCode(ms.sendErr) // the status gRPC ended the RPC with, which ended its context too
	}
	exit := Exit{
		FullMethod: info.FullMethod,
		Code:       code,
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

// codeOf is the code the client receives for an RPC that ended with err
// (the handler's, or the one gRPC meets sending the answer): if the RPC's
// context ended first, its end: DeadlineExceeded once its deadline has
// passed (the client's, which is no later, has passed too), else
// Canceled; otherwise err's code.
func codeOf(ctx context.Context, err error) codes.Code {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			return codes.DeadlineExceeded
		}
		return status.FromContextError(ctxErr).Code()
	}
	return errCode(err)
}

// errCode is the code gRPC sends for err: a status error's own, a
// context error's (Canceled, DeadlineExceeded), Unknown for another
// error, OK for none.
func errCode(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return status.FromContextError(err).Code()
}

// marshals reports whether gRPC can marshal resp, a unary response, for
// the RPC of ctx: with the codec registered for the RPC's content-subtype
// ("proto" when it has none, or none is registered for it, as gRPC does).
// A server that forces a codec (grpc.ForceServerCodecV2) is checked with
// the registered one. An untyped nil marshals: gRPC sends it as an empty
// message without asking the codec.
func marshals(ctx context.Context, resp any) bool {
	if resp == nil {
		return true
	}
	subtype := ""
	if s, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ ContentSubtype() string }); ok {
		subtype = s.ContentSubtype()
	}
	codec := encoding.GetCodecV2(subtype)
	if codec == nil {
		codec = encoding.GetCodecV2(proto.Name)
	}
	if codec == nil {
		return true // nothing to check with
	}
	data, err := codec.Marshal(resp)
	if err != nil {
		return false
	}
	data.Free()
	return true
}

func mustHave(rec *recruiter.Recruiter) {
	if rec == nil {
		panic("stealgrpc: an interceptor needs a *recruiter.Recruiter, got nil")
	}
}
