package stealgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/adaptertest"
	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestInlineSliceRunsBeforeTheRPCEnds: in inline mode the slice runs
// inside the interceptor, so the response (unary) or the status (stream)
// follows it; the client still receives the handler's answer intact.
func TestInlineSliceRunsBeforeTheRPCEnds(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	var done atomic.Bool
	with := serve(t, adaptertest.Setup{Recruiters: []*recruiter.Recruiter{rig.Rec}, Around: returned(&done)})
	without := serve(t, adaptertest.Setup{Around: plain})
	var returnedAtStart atomic.Bool
	rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
		returnedAtStart.Store(done.Load())
		return recruiter.Report{Items: 1, More: true}, nil
	})
	rig.Draw()
	for _, kind := range kinds {
		got, want := with.Call(t, kind+"hit", nil), without.Call(t, kind+"hit", nil)
		if got.Raw != want.Raw {
			t.Errorf("inline %shit: the client got\n%s\nwant\n%s", kind, got.Raw, want.Raw)
		}
		rig.NextRun(t)
		if returnedAtStart.Load() {
			t.Errorf("inline %shit: the slice ran after the interceptor returned", kind)
		}
		rig.Settle(t)
	}
	if n := rig.Started(); n != 2 {
		t.Fatalf("%d inline slices, want 2", n)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	exits := make(chan stealgrpc.Exit, 16)
	classify := func(e stealgrpc.Exit) bool {
		exits <- e
		return e.Code == codes.OK && !e.Marked // the opposite of the default: slow answers
	}
	var filtered atomic.Int32
	noWatch := func(ctx context.Context, fullMethod string) bool {
		filtered.Add(1)
		if _, ok := metadata.FromIncomingContext(ctx); !ok {
			t.Errorf("the filter of %s got a context without the RPC's metadata", fullMethod)
		}
		return fullMethod != healthpb.Health_Watch_FullMethodName
	}
	srv := withInterceptors(t, rig.Rec, nil, stealgrpc.WithClassifier(classify), stealgrpc.WithFilter(noWatch), stealgrpc.WithClassifier(nil))

	srv.Call(t, "slow", nil) // dismissed: neither filter nor classifier
	if n := filtered.Load(); n != 0 || len(exits) != 0 {
		t.Fatalf("a dismissed RPC consulted the filter %d times, the classifier %d times", n, len(exits))
	}

	rig.Draw()
	for _, answer := range []string{"stream/slow", "hit", "slow"} {
		srv.Call(t, answer, nil)
		rig.Settle(t)
	}
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran, want 1: only Check(slow) is a fast exit to the classifier, Watch is filtered", n)
	}
	if n := filtered.Load(); n != 3 {
		t.Fatalf("the filter was consulted %d times, want 3", n)
	}
	cached, slow := <-exits, <-exits
	if len(exits) != 0 {
		t.Fatalf("the classifier saw %d more exits; the filtered Watch must not reach it", len(exits))
	}
	resp, _ := slow.Response.(*healthpb.HealthCheckResponse)
	req, _ := slow.Request.(*healthpb.HealthCheckRequest)
	if slow.FullMethod != healthpb.Health_Check_FullMethodName || req.GetService() != "slow" ||
		resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING || slow.Code != codes.OK || slow.Err != nil ||
		slow.Marked || slow.Elapsed <= 0 || slow.Stream {
		t.Fatalf("the classifier saw %+v", slow)
	}
	if !cached.Marked || cached.Code != codes.OK || cached.Stream {
		t.Fatalf("the classifier saw %+v for Check(hit)", cached)
	}
}

// TestClassifierSeesErrorsAndStreams: the code and error of a failed RPC,
// no response after an error, and streams flagged, without messages; an
// answer that failed to marshal keeps the handler's response and nil
// error, with the code the client got.
func TestClassifierSeesErrorsAndStreams(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	exits := make(chan stealgrpc.Exit, 16)
	srv := withInterceptors(t, rig.Rec, stealgrpc.WithClassifier(func(e stealgrpc.Exit) bool { exits <- e; return false }))
	rig.Draw()
	for _, kind := range kinds {
		srv.Call(t, kind+"fail", nil)
		e := <-exits
		wantMethod := map[string]string{"": healthpb.Health_Check_FullMethodName, "stream/": healthpb.Health_Watch_FullMethodName}[kind]
		if e.FullMethod != wantMethod || e.Code != codes.Internal || status.Convert(e.Err).Message() != "database on fire" ||
			!e.Marked || e.Response != nil || e.Elapsed <= 0 || e.Stream != (kind == "stream/") {
			t.Errorf("%sfail: the classifier saw %+v", kind, e)
		}
		if _, isReq := e.Request.(*healthpb.HealthCheckRequest); isReq != (kind == "") {
			t.Errorf("%sfail: the classifier saw the request %v", kind, e.Request)
		}
	}
	srv.Call(t, "unsendable", nil)
	if e := <-exits; e.Code != codes.Internal || e.Err != nil || e.Response == nil {
		t.Errorf("unsendable: the classifier saw %+v, want Internal with the handler's response and no error", e)
	}
	srv.Call(t, "stream/unsendable", nil)
	if e := <-exits; e.Code != codes.Internal || e.Err != nil {
		t.Errorf("stream/unsendable: the classifier saw %+v, want Internal and the handler's nil error", e)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran with a classifier that says no", n)
	}
}

// TestUntypedNilReplyIsOK: a unary handler that returns an untyped nil and
// no error is answered OK with an empty message, so the classifier is told
// OK and a marked one is a fast exit whose slice runs.
func TestUntypedNilReplyIsOK(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	exits := make(chan stealgrpc.Exit, 1)
	classify := func(e stealgrpc.Exit) bool {
		exits <- e
		return stealgrpc.DefaultClassifier(e)
	}
	nilReply := func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
		recruiter.MarkFastExit(ctx)
		return nil, nil
	}
	srv := serve(t, adaptertest.Setup{Around: plain},
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rig.Rec, stealgrpc.WithClassifier(classify)), nilReply))
	rig.Draw()
	resp, err := srv.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp == nil || resp.GetStatus() != healthpb.HealthCheckResponse_UNKNOWN {
		t.Fatalf("the client got %v, %v; want an empty response and OK", resp, err)
	}
	if e := <-exits; e.Code != codes.OK || e.Err != nil || e.Response != nil || !e.Marked {
		t.Errorf("the classifier saw %+v, want a marked OK with no response", e)
	}
	rig.Settle(t)
	if n := rig.Started(); n != 1 {
		t.Fatalf("%d slices ran after a marked OK, want 1", n)
	}
}
