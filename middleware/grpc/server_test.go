package stealgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// services are the kinds of answer the catalog gives, by the service name
// of a health request.
var services = []string{"cached", "slow", "missing", "broken"}

// catalog is a health service standing in for an application: Check is
// the unary method, Watch the server-streaming one.
type catalog struct {
	healthpb.UnimplementedHealthServer
}

// answer is what both methods end with for a service: "cached" is a fast
// exit, "slow" is not marked, "missing" is a marked NotFound, "broken" a
// marked Internal error (with a response that gRPC drops).
func answer(ctx context.Context, service string) (*healthpb.HealthCheckResponse, error) {
	switch service {
	case "cached":
		recruiter.MarkFastExit(ctx)
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case "slow":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	case "missing":
		recruiter.MarkFastExit(ctx)
		return nil, status.Errorf(codes.NotFound, "unknown service %q", service)
	case "broken":
		recruiter.MarkFastExit(ctx)
		return &healthpb.HealthCheckResponse{}, status.Error(codes.Internal, "database on fire")
	}
	return nil, status.Errorf(codes.InvalidArgument, "no service %q in the test", service)
}

func (catalog) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if p, ok := ctx.Value(probeKey{}).(*probe); ok {
		p.handlerCtx, p.span = ctx, trace.SpanContextFromContext(ctx)
	}
	grpc.SetHeader(ctx, metadata.Pairs("x-cache", "hit"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-served-by", "catalog"))
	return answer(ctx, req.GetService())
}

func (catalog) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	if p, ok := ctx.Value(probeKey{}).(*probe); ok {
		p.handlerCtx, p.span = ctx, trace.SpanContextFromContext(ctx)
		p.handlerStream = stream.(*grpc.GenericServerStream[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse]).ServerStream
	}
	stream.SetHeader(metadata.Pairs("x-cache", "hit"))
	stream.SetTrailer(metadata.Pairs("x-served-by", "catalog"))
	for _, s := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVICE_UNKNOWN, healthpb.HealthCheckResponse_SERVING} {
		if err := stream.Send(&healthpb.HealthCheckResponse{Status: s}); err != nil {
			return err
		}
	}
	_, err := answer(ctx, req.GetService())
	return err
}

type probeKey struct{}

// probe is one RPC as the outermost interceptor saw it: what it passed on
// and what the handler got. returned turns true once everything inside
// the probe (stealgrpc, the handler) has returned.
type probe struct {
	ctx, handlerCtx       context.Context
	stream, handlerStream grpc.ServerStream
	span                  trace.SpanContext
	returned              atomic.Bool
}

type probeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *probeStream) Context() context.Context { return s.ctx }

// server is a real gRPC server on loopback and a client of it.
type server struct {
	health healthpb.HealthClient
	probes chan *probe // one per RPC, once the interceptors inside the probe have returned
}

// serve starts a server with the probe as its outermost interceptor, then
// opts (stealgrpc, otelgrpc...).
func serve(t *testing.T, opts ...grpc.ServerOption) *server {
	t.Helper()
	s := &server{probes: make(chan *probe, 16)}
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		p := &probe{}
		p.ctx = context.WithValue(ctx, probeKey{}, p)
		resp, err := handler(p.ctx, req)
		p.returned.Store(true)
		s.probes <- p
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		p := &probe{}
		p.ctx = context.WithValue(ss.Context(), probeKey{}, p)
		p.stream = &probeStream{ServerStream: ss, ctx: p.ctx}
		err := handler(srv, p.stream)
		p.returned.Store(true)
		s.probes <- p
		return err
	}
	opts = append([]grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}, opts...)
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, catalog{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s.health = healthpb.NewHealthClient(conn)
	return s
}

// withInterceptors is a server with stealgrpc's interceptors on rec.
func withInterceptors(t *testing.T, rec *recruiter.Recruiter, opts ...stealgrpc.Option) *server {
	return serve(t, grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec, opts...)),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec, opts...)))
}

func outgoing(t *testing.T, md metadata.MD) context.Context {
	if md == nil {
		return t.Context()
	}
	return metadata.NewOutgoingContext(t.Context(), md)
}

// check calls Check and returns all the client sees: response, code,
// message, header and trailer metadata.
func (s *server) check(t *testing.T, service string, md metadata.MD) string {
	t.Helper()
	var header, trailer metadata.MD
	resp, err := s.health.Check(outgoing(t, md), &healthpb.HealthCheckRequest{Service: service}, grpc.Header(&header), grpc.Trailer(&trailer))
	st := status.Convert(err)
	return fmt.Sprintf("response=%v code=%v message=%q header=%v trailer=%v", resp, st.Code(), st.Message(), header, trailer)
}

// watch calls Watch and returns all the client sees: messages, code,
// message, header and trailer metadata.
func (s *server) watch(t *testing.T, service string, md metadata.MD) string {
	t.Helper()
	stream, err := s.health.Watch(outgoing(t, md), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := stream.Recv()
		if err != nil {
			header, _ := stream.Header()
			st := status.Convert(err)
			if errors.Is(err, io.EOF) {
				st = status.New(codes.OK, "")
			}
			return fmt.Sprintf("messages=%v code=%v message=%q header=%v trailer=%v", got, st.Code(), st.Message(), header, stream.Trailer())
		}
		got = append(got, m.GetStatus().String())
	}
}

// call makes one RPC of the given kind, "unary" or "stream".
func (s *server) call(t *testing.T, kind, service string, md metadata.MD) string {
	t.Helper()
	if kind == "stream" {
		return s.watch(t, service, md)
	}
	return s.check(t, service, md)
}

var kinds = []string{"unary", "stream"}
