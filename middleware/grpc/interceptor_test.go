package stealgrpc_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// fakeStream is a ServerStream for calling a stream interceptor directly.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fakeStream) Context() context.Context { return s.ctx }

var (
	checkInfo = &grpc.UnaryServerInfo{FullMethod: healthpb.Health_Check_FullMethodName}
	watchInfo = &grpc.StreamServerInfo{FullMethod: healthpb.Health_Watch_FullMethodName, IsServerStream: true}
)

// TestDismissedRPCAllocatesNothing calls the interceptors directly. It is
// not parallel: AllocsPerRun counts the whole process's allocations.
func TestDismissedRPCAllocatesNothing(t *testing.T) {
	rig := stealtest.New(t, false)
	unary := stealgrpc.UnaryServerInterceptor(rig.Rec, stealgrpc.WithFilter(func(context.Context, string) bool { return true }))
	stream := stealgrpc.StreamServerInterceptor(rig.Rec)
	ctx := context.Background()
	req, resp := &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}
	ss := &fakeStream{ctx: ctx}
	var sameCtx, sameReq, sameStream bool
	unaryHandler := func(c context.Context, r any) (any, error) {
		sameCtx, sameReq = c == ctx, r == any(req)
		return resp, nil
	}
	streamHandler := func(_ any, s grpc.ServerStream) error {
		sameStream = s == grpc.ServerStream(ss)
		return nil
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if got, err := unary(ctx, req, checkInfo, unaryHandler); got != any(resp) || err != nil {
			t.Fatalf("the unary interceptor returned %v, %v", got, err)
		}
		if err := stream(nil, ss, watchInfo, streamHandler); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a dismissed unary and stream RPC allocate %v times, want 0", allocs)
	}
	if !sameCtx || !sameReq || !sameStream {
		t.Errorf("the handlers got another context (%v), request (%v) or stream (%v)", !sameCtx, !sameReq, !sameStream)
	}
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed RPCs", n)
	}
}

// TestDrawnRPCReturnsTheHandlersResult: the interceptors hand back the
// handler's own response and error values.
func TestDrawnRPCReturnsTheHandlersResult(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	unary := stealgrpc.UnaryServerInterceptor(rig.Rec)
	stream := stealgrpc.StreamServerInterceptor(rig.Rec)
	resp := &healthpb.HealthCheckResponse{}
	notFound := status.Error(codes.NotFound, "none")
	wrapped := errors.Join(errors.New("context"), notFound)
	rig.Draw()
	for _, want := range []error{nil, notFound, wrapped} {
		// Each RPC ends (its context is cancelled) and its slice settles
		// before the next: with one slice slot, a slice waiting for its RPC
		// to end would dismiss the next draw.
		ctx, end := context.WithCancel(t.Context())
		got, err := unary(ctx, nil, checkInfo, func(ctx context.Context, _ any) (any, error) {
			recruiter.MarkFastExit(ctx)
			return resp, want
		})
		if got != any(resp) || err != want {
			t.Errorf("unary returned %v, %v; want the handler's %v, %v", got, err, resp, want)
		}
		end()
		rig.Settle(t)

		ctx, end = context.WithCancel(t.Context())
		err = stream(nil, &fakeStream{ctx: ctx}, watchInfo, func(_ any, ss grpc.ServerStream) error {
			recruiter.MarkFastExit(ss.Context())
			return want
		})
		if err != want {
			t.Errorf("stream returned %v, want the handler's %v", err, want)
		}
		end()
		rig.Settle(t)
	}
	if n := rig.Started(); n != 6 {
		t.Fatalf("%d slices ran, want 6: every RPC was drawn, marked and OK or NotFound", n)
	}
}

func TestDefaultClassifier(t *testing.T) {
	t.Parallel()
	for code := codes.OK; code <= codes.Unauthenticated; code++ {
		serverFault := map[codes.Code]bool{
			codes.Canceled: true, codes.Unknown: true, codes.DeadlineExceeded: true, codes.Unimplemented: true,
			codes.Internal: true, codes.Unavailable: true, codes.DataLoss: true,
		}[code]
		for _, stream := range []bool{false, true} {
			if got := stealgrpc.DefaultClassifier(stealgrpc.Exit{Code: code, Stream: stream}); got {
				t.Errorf("an unmarked %v is a fast exit", code)
			}
			if got := stealgrpc.DefaultClassifier(stealgrpc.Exit{Code: code, Marked: true, Stream: stream}); got == serverFault {
				t.Errorf("a marked %v: fast exit %v, want %v", code, got, !serverFault)
			}
		}
	}
}
