package stealgrpc_test

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// A recruiter, a job, a server with both interceptors, and a
// service whose handlers say when they answered cheaply.
func ExampleUnaryServerInterceptor() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, _ := recruiter.New(rdb, recruiter.Config{})
	rec.Register(recruiter.Func("trim-audit-log", trimAuditLog(rdb)), recruiter.JobConfig{Every: time.Minute})
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec)), grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec)))
	healthpb.RegisterHealthServer(srv, &cachedHealth{})
	lis, _ := net.Listen("tcp", ":50051")
	log.Fatal(srv.Serve(lis))
}

// With otelgrpc's stats handler, each recruitment span links to the span
// of the RPC that lent its time; a filter keeps a method out, and the
// streaming handler marks its fast exit on its stream's context.
func ExampleStreamServerInterceptor() {
	var rec *recruiter.Recruiter // from recruiter.New
	noReflection := func(_ context.Context, fullMethod string) bool {
		return fullMethod != "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
	}
	srv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler()),
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec, stealgrpc.WithFilter(noReflection))),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec, stealgrpc.WithFilter(noReflection))),
	)
	healthpb.RegisterHealthServer(srv, &cachedHealth{})
}

// cachedHealth answers from memory: every answer is a fast exit.
type cachedHealth struct {
	healthpb.UnimplementedHealthServer
}

func (*cachedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	recruiter.MarkFastExit(ctx) // a cache hit: this RPC may lend its time
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (*cachedHealth) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if err := stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	recruiter.MarkFastExit(stream.Context())
	return nil
}

func trimAuditLog(rdb *redis.Client) func(context.Context) (recruiter.Report, error) {
	return func(ctx context.Context) (recruiter.Report, error) {
		n, err := rdb.XTrimMaxLenApprox(ctx, "audit", 100_000, 500).Result()
		return recruiter.Report{Items: int(n), More: n == 500}, err
	}
}
