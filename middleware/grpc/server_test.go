package stealgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/adaptertest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// TestConformance runs the adapters' suite on stealgrpc.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Exercise(t, host{})
}

// host serves the catalog: Check is the unary method, Watch the
// server-streaming one (its answers are named stream/<service>), List
// the unary answer that fails to marshal.
type host struct{}

// answers of one kind (unary or stream), by service name.
var answers = []adaptertest.Answer{
	{Name: "hit", Marked: true, Runs: 1, Typical: true},
	{Name: "slow"},
	{Name: "missing", Marked: true, Runs: 1}, // a marked NotFound: an empty result
	{Name: "fail", Marked: true},             // a marked Internal error, with a response gRPC drops
	{Name: "unsendable", Marked: true},       // a marked OK whose response fails to marshal: the client gets Internal
	{Name: "expired", Marked: true},          // a marked OK after the client's deadline: the client gets DeadlineExceeded
}

func (host) Answers() []adaptertest.Answer {
	var all []adaptertest.Answer
	for _, a := range answers {
		all = append(all, a)
		a.Name = "stream/" + a.Name
		all = append(all, a)
	}
	return all
}

// unsendable is a response that proto cannot marshal: a string that is
// not UTF-8, as a map key.
var unsendable = &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{"\xff": {}}}

// expiry is the deadline of the calls for "expired".
const expiry = 100 * time.Millisecond

// catalog is a health service standing in for an application.
type catalog struct {
	healthpb.UnimplementedHealthServer
	gaveUp chan struct{} // a client of "expired" has its answer (DeadlineExceeded)
}

// answer is what both methods end with for a service.
func (c *catalog) answer(ctx context.Context, service string) (*healthpb.HealthCheckResponse, error) {
	switch service {
	case "hit":
		recruiter.MarkFastExit(ctx)
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case "slow":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	case "missing":
		recruiter.MarkFastExit(ctx)
		return nil, status.Errorf(codes.NotFound, "unknown service %q", service)
	case "fail":
		recruiter.MarkFastExit(ctx)
		return &healthpb.HealthCheckResponse{}, status.Error(codes.Internal, "database on fire")
	case "expired":
		// An answer once the client has surely given up and the RPC's
		// deadline has passed here too.
		recruiter.MarkFastExit(ctx)
		<-ctx.Done()
		select {
		case <-c.gaveUp:
		case <-time.After(10 * time.Second):
		}
		if deadline, ok := ctx.Deadline(); ok {
			time.Sleep(time.Until(deadline))
		}
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "no service %q in the test", service)
}

func (c *catalog) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	adaptertest.Inside(ctx, ctx, any(req))
	grpc.SetHeader(ctx, metadata.Pairs("x-cache", "hit"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-served-by", "catalog"))
	return c.answer(ctx, req.GetService())
}

func (c *catalog) List(ctx context.Context, req *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	adaptertest.Inside(ctx, ctx, any(req))
	recruiter.MarkFastExit(ctx)
	return unsendable, nil
}

func (c *catalog) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	adaptertest.Inside(ctx, ctx, stream.(*grpc.GenericServerStream[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse]).ServerStream)
	stream.SetHeader(metadata.Pairs("x-cache", "hit"))
	stream.SetTrailer(metadata.Pairs("x-served-by", "catalog"))
	for _, s := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVICE_UNKNOWN, healthpb.HealthCheckResponse_SERVING} {
		if err := stream.Send(&healthpb.HealthCheckResponse{Status: s}); err != nil {
			return err
		}
	}
	if req.GetService() == "unsendable" {
		recruiter.MarkFastExit(ctx)
		_ = stream.SendMsg(unsendable) // fails; gRPC ends the RPC with Internal at once
		return nil                     // a handler that ignores it
	}
	_, err := c.answer(ctx, req.GetService())
	return err
}

// server is a real gRPC server on loopback and a client of it.
type server struct {
	health  healthpb.HealthClient
	catalog *catalog
	probes  chan *adaptertest.Probe // one per RPC, from its start
	answer  atomic.Pointer[string]  // the answer being asked for, for the classifier
}

func (host) Serve(t *testing.T, s adaptertest.Setup) adaptertest.Client {
	return serve(t, s)
}

// serve starts a server with s.Around as its outermost layer, then
// s.Tracer's otelgrpc stats handler, then an interceptor of each
// recruiter (with s.Classify), then opts.
func serve(t *testing.T, s adaptertest.Setup, opts ...grpc.ServerOption) *server {
	t.Helper()
	srv := &server{catalog: &catalog{gaveUp: make(chan struct{}, 1)}, probes: make(chan *adaptertest.Probe, 16)}
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		ctx, p := adaptertest.NewProbe(ctx)
		srv.probes <- p
		adaptertest.Outside(ctx, ctx, req)
		s.Around(func() { resp, err = handler(ctx, req) })
		return resp, err
	}
	stream := func(impl any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx, p := adaptertest.NewProbe(ss.Context())
		srv.probes <- p
		ps := &probedStream{ServerStream: ss, ctx: ctx}
		adaptertest.Outside(ctx, ctx, grpc.ServerStream(ps))
		s.Around(func() { err = handler(impl, ps) })
		return err
	}
	all := []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
	if s.Tracer != nil {
		all = append(all, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(s.Tracer))))
	}
	var options []stealgrpc.Option
	if s.Classify != nil {
		options = append(options, stealgrpc.WithClassifier(func(e stealgrpc.Exit) bool {
			return s.Classify(adaptertest.Seen{Answer: *srv.answer.Load(), Status: int(e.Code), Marked: e.Marked, Elapsed: e.Elapsed})
		}))
	}
	for _, rec := range s.Recruiters {
		all = append(all, grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec, options...)),
			grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec, options...)))
	}
	g := grpc.NewServer(append(all, opts...)...)
	healthpb.RegisterHealthServer(g, srv.catalog)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		g.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	srv.health = healthpb.NewHealthClient(conn)
	return srv
}

// plain is the Around of a server that needs none.
func plain(serve func()) { serve() }

type probedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *probedStream) Context() context.Context { return s.ctx }

// Call makes one RPC: Check, or List for "unsendable"; Watch for
// "stream/..." answers.
func (s *server) Call(t *testing.T, answer string, forged map[string]string) adaptertest.Reply {
	t.Helper()
	s.answer.Store(&answer)
	ctx := t.Context()
	if forged != nil {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(forged))
	}
	service, stream := strings.CutPrefix(answer, "stream/")
	if service == "expired" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, expiry)
		defer cancel()
		defer func() { s.catalog.gaveUp <- struct{}{} }()
	}
	var raw string
	var err error
	switch {
	case stream:
		raw, err = s.watch(t, ctx, service)
	case service == "unsendable":
		var resp *healthpb.HealthListResponse
		resp, err = s.health.List(ctx, &healthpb.HealthListRequest{})
		raw = fmt.Sprintf("response=%v", resp)
	default:
		var header, trailer metadata.MD
		var resp *healthpb.HealthCheckResponse
		resp, err = s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.Header(&header), grpc.Trailer(&trailer))
		raw = fmt.Sprintf("response=%v header=%v trailer=%v", resp, header, trailer)
	}
	st := status.Convert(err)
	message := st.Message()
	if st.Code() == codes.DeadlineExceeded {
		message = "" // it says which of the client's ways of noticing came first
	}
	return adaptertest.Reply{
		Raw:    fmt.Sprintf("%s code=%v message=%q", raw, st.Code(), message),
		Status: int(st.Code()),
		Probe:  <-s.probes,
	}
}

// watch calls Watch and returns the messages and metadata the client
// saw, and the RPC's end.
func (s *server) watch(t *testing.T, ctx context.Context, service string) (string, error) {
	t.Helper()
	stream, err := s.health.Watch(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := stream.Recv()
		if err != nil {
			header, _ := stream.Header()
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return fmt.Sprintf("messages=%v header=%v trailer=%v", got, header, stream.Trailer()), err
		}
		got = append(got, m.GetStatus().String())
	}
}

// withInterceptors is a server with stealgrpc's interceptors on rec and
// opts, for the package's own tests.
func withInterceptors(t *testing.T, rec *recruiter.Recruiter, opts ...stealgrpc.Option) *server {
	return serve(t, adaptertest.Setup{Around: plain},
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec, opts...)),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec, opts...)))
}

// kinds are the prefixes of a unary and a stream answer's name.
var kinds = []string{"", "stream/"}

// returned reports, through a server's Around, whether the outermost
// interceptor has returned.
func returned(flag *atomic.Bool) func(func()) {
	return func(serve func()) {
		flag.Store(false)
		serve()
		flag.Store(true)
	}
}
