package stealgrpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

var serving = &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}

func cacheHit(ctx context.Context, _ any) (any, error) {
	recruiter.MarkFastExit(ctx)
	return serving, nil
}

func streamHit(_ any, ss grpc.ServerStream) error {
	recruiter.MarkFastExit(ss.Context())
	return nil
}

func otelNoop() stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()), otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))
}

// withStats wraps handler in the calls gRPC makes on a server's stats
// handler for one unary RPC, events included: gRPC allocates them only
// when a stats handler is installed, so they are part of otelgrpc's cost.
func withStats(sh stats.Handler, handler grpc.UnaryHandler) grpc.UnaryHandler {
	return func(ctx context.Context, req any) (any, error) {
		ctx = sh.TagRPC(ctx, &stats.RPCTagInfo{FullMethodName: healthpb.Health_Check_FullMethodName})
		sh.HandleRPC(ctx, &stats.InHeader{FullMethod: healthpb.Health_Check_FullMethodName})
		begin := &stats.Begin{BeginTime: time.Now()}
		sh.HandleRPC(ctx, begin)
		sh.HandleRPC(ctx, &stats.InPayload{RecvTime: time.Now()})
		resp, err := handler(ctx, req)
		sh.HandleRPC(ctx, &stats.OutHeader{})
		sh.HandleRPC(ctx, &stats.OutPayload{SentTime: time.Now()})
		sh.HandleRPC(ctx, &stats.OutTrailer{})
		sh.HandleRPC(ctx, &stats.End{BeginTime: begin.BeginTime, EndTime: time.Now(), Error: err})
		return resp, err
	}
}

// BenchmarkUnaryInterceptor calls the interceptor directly, without a
// network, per RPC: the bare handler, the interceptor on a dismissed RPC,
// on a drawn RPC that was not a fast exit (observed only), and otelgrpc's
// stats handler with no-op providers as the reference.
func BenchmarkUnaryInterceptor(b *testing.B) {
	rig := stealtest.New(b, false)
	req := &healthpb.HealthCheckRequest{Service: "hit"}
	run := func(name string, call func(context.Context) (any, error)) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				call(ctx)
			}
		})
	}
	intercept := func(i grpc.UnaryServerInterceptor) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) { return i(ctx, req, checkInfo, cacheHit) }
	}
	run("bare", func(ctx context.Context) (any, error) { return cacheHit(ctx, req) })
	rig.Dismiss()
	run("dismissed", intercept(stealgrpc.UnaryServerInterceptor(rig.Rec)))
	otel := withStats(otelNoop(), cacheHit)
	run("otelgrpc-noop", func(ctx context.Context) (any, error) { return otel(ctx, req) })
	rig.Draw()
	never := stealgrpc.WithClassifier(func(stealgrpc.Exit) bool { return false })
	run("drawn-observed", intercept(stealgrpc.UnaryServerInterceptor(rig.Rec, never)))

	// Drawn RPCs are rare, so they meet a cold CPU; comparing them with a
	// hot loop would flatter the reference. Each "cold" iteration follows a
	// millisecond idle, outside the timing, as RPCs in a quiet service do;
	// "req-ns/op" is the RPC goroutine's time alone. The drawn fast exit
	// hands a real slice (lock, job, release on a real Redis) to a
	// goroutine, which the benchmark waits for, untimed.
	cold := func(name string, call func(context.Context) (any, error), drawn bool) {
		b.Run("cold/"+name, func(b *testing.B) {
			var onRPC time.Duration
			for b.Loop() {
				rig.ForgetCoolOffs()
				// gRPC cancels an RPC's context when the RPC ends; a
				// background slice waits for that.
				ctx, end := context.WithCancel(context.Background())
				t0 := time.Now()
				call(ctx)
				onRPC += time.Since(t0)
				end()
				if drawn {
					rig.NextRun(b)
					rig.Settle(b)
				} else {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(onRPC.Nanoseconds())/float64(b.N), "req-ns/op")
		})
	}
	cold("bare", func(ctx context.Context) (any, error) { return cacheHit(ctx, req) }, false)
	cold("otelgrpc-noop", func(ctx context.Context) (any, error) { return otel(ctx, req) }, false)
	cold("drawn-fast-exit", intercept(stealgrpc.UnaryServerInterceptor(rig.Rec)), true)
}

// BenchmarkStreamInterceptor is the stream interceptor called directly:
// the bare handler, dismissed, and drawn but not a fast exit.
func BenchmarkStreamInterceptor(b *testing.B) {
	rig := stealtest.New(b, false)
	ss := &fakeStream{ctx: context.Background()}
	run := func(name string, call func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
	intercept := func(i grpc.StreamServerInterceptor) func() error {
		return func() error { return i(nil, ss, watchInfo, streamHit) }
	}
	run("bare", func() error { return streamHit(nil, ss) })
	rig.Dismiss()
	run("dismissed", intercept(stealgrpc.StreamServerInterceptor(rig.Rec)))
	rig.Draw()
	never := stealgrpc.WithClassifier(func(stealgrpc.Exit) bool { return false })
	run("drawn-observed", intercept(stealgrpc.StreamServerInterceptor(rig.Rec, never)))
}

// BenchmarkLoopbackUnary is a whole unary RPC through a real server and
// client on loopback, where otelgrpc runs as gRPC runs it: a bare server,
// one with an interceptor that does nothing, stealgrpc dismissed and
// drawn-observed, and otelgrpc with no-op providers.
func BenchmarkLoopbackUnary(b *testing.B) {
	rig := stealtest.New(b, false)
	run := func(name string, opts ...grpc.ServerOption) {
		b.Run(name, func(b *testing.B) {
			client := loopback(b, opts...)
			ctx := b.Context()
			req := &healthpb.HealthCheckRequest{Service: "hit"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("bare")
	// Any unary interceptor costs gRPC's generated handler two allocations
	// (its UnaryServerInfo and handler closure); this is that baseline.
	passThrough := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(ctx, req)
	}
	run("pass-through-interceptor", grpc.ChainUnaryInterceptor(passThrough))
	rig.Dismiss()
	run("dismissed", grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rig.Rec)))
	run("otelgrpc-noop", grpc.StatsHandler(otelNoop()))
	rig.Draw()
	never := stealgrpc.WithClassifier(func(stealgrpc.Exit) bool { return false })
	run("drawn-observed", grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rig.Rec, never)))
}

// loopbackHealth answers Check with a marked SERVING, header and trailer
// metadata, as a cached answer of a real service would.
type loopbackHealth struct {
	healthpb.UnimplementedHealthServer
}

func (loopbackHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	grpc.SetHeader(ctx, metadata.Pairs("x-cache", "hit"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-served-by", "catalog"))
	recruiter.MarkFastExit(ctx)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// loopback serves loopbackHealth with opts on 127.0.0.1 and returns a client.
func loopback(b *testing.B, opts ...grpc.ServerOption) healthpb.HealthClient {
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, loopbackHealth{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(lis); close(served) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(); srv.Stop(); <-served })
	return healthpb.NewHealthClient(conn)
}
