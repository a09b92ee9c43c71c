package stealgrpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// lateCatalog answers a marked OK after the RPC's deadline has passed and
// the client has given up (clientDone), so the client surely got
// DeadlineExceeded: an answer sent at the deadline could still reach a
// client whose own timer runs late on a loaded machine.
type lateCatalog struct {
	healthpb.UnimplementedHealthServer
	clientDone chan struct{}
}

func (c lateCatalog) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	recruiter.MarkFastExit(ctx)
	<-ctx.Done()
	select {
	case <-c.clientDone:
	case <-time.After(10 * time.Second):
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// cachedCatalog answers a marked OK at once.
type cachedCatalog struct {
	healthpb.UnimplementedHealthServer
}

func (cachedCatalog) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	recruiter.MarkFastExit(ctx)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// dial serves svc with the given interceptors and returns a client of it.
func dial(t *testing.T, svc healthpb.HealthServer, interceptors ...grpc.UnaryServerInterceptor) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	healthpb.RegisterHealthServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// TestHandlerPastItsDeadlineIsNoFastExit: a marked handler that returns OK
// after the RPC's deadline: the client gets DeadlineExceeded, and so must
// Exit.Code, so that no slice runs.
func TestHandlerPastItsDeadlineIsNoFastExit(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	rig.Draw()
	codesSeen := make(chan codes.Code, 1)
	late := lateCatalog{clientDone: make(chan struct{})}
	client := dial(t, late, stealgrpc.UnaryServerInterceptor(rig.Rec, stealgrpc.WithClassifier(func(e stealgrpc.Exit) bool {
		codesSeen <- e.Code
		return stealgrpc.DefaultClassifier(e)
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	close(late.clientDone)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("the client got %v, want DeadlineExceeded", err)
	}
	// The server's context ends by its own timer (DeadlineExceeded) or by
	// the client's reset when its deadline passes first (Canceled): either
	// way not the OK the handler returned.
	if got := <-codesSeen; got != codes.DeadlineExceeded && got != codes.Canceled {
		t.Errorf("Exit.Code = %v, want DeadlineExceeded or Canceled, as the RPC ended", got)
	}
	rig.Settle(t)
	if rig.Started() != 0 {
		t.Errorf("%d slices ran for an RPC the client saw fail", rig.Started())
	}
}

// TestChainedInterceptorsBothSeeTheMark: two recruiters' interceptors
// chained around one handler, both drawn: each runs its slice.
func TestChainedInterceptorsBothSeeTheMark(t *testing.T) {
	t.Parallel()
	outer, inner := stealtest.New(t, false), stealtest.New(t, false)
	outer.Draw()
	inner.Draw()
	client := dial(t, cachedCatalog{}, stealgrpc.UnaryServerInterceptor(outer.Rec), stealgrpc.UnaryServerInterceptor(inner.Rec))
	if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	outer.NextRun(t)
	inner.NextRun(t)
}
