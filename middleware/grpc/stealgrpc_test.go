package stealgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDismissedRPCIsUntouched(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	with := withInterceptors(t, rig.Rec)
	without := serve(t)
	for _, kind := range kinds {
		for _, service := range services {
			if a, b := with.call(t, kind, service, nil), without.call(t, kind, service, nil); a != b {
				t.Errorf("%s %s differs with the interceptor:\n%s\nwithout:\n%s", kind, service, a, b)
			}
			<-without.probes
			p := <-with.probes
			if p.handlerCtx != p.ctx {
				t.Errorf("%s %s: the handler got another context", kind, service)
			}
			if kind == "stream" && p.handlerStream != p.stream {
				t.Errorf("%s %s: the handler got another ServerStream (%T)", kind, service, p.handlerStream)
			}
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran for dismissed RPCs", n)
	}
}

// TestDrawnRPCs: marked answers run one slice unless their code is a
// server fault; the client receives exactly what the handler returned.
func TestDrawnRPCs(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	with := withInterceptors(t, rig.Rec)
	without := serve(t)
	rig.Draw()
	for _, kind := range kinds {
		for _, tc := range []struct {
			service string
			code    codes.Code
			message string
			runs    int
		}{
			{"cached", codes.OK, "", 1},
			{"slow", codes.OK, "", 0},
			{"missing", codes.NotFound, `unknown service "missing"`, 1},
			{"broken", codes.Internal, "database on fire", 0},
		} {
			before := rig.Started()
			got, want := with.call(t, kind, tc.service, nil), without.call(t, kind, tc.service, nil)
			if got != want {
				t.Errorf("drawn %s %s differs from the bare server's:\n%s\nwant:\n%s", kind, tc.service, got, want)
			}
			if wantStatus := fmt.Sprintf("code=%v message=%q", tc.code, tc.message); !strings.Contains(got, wantStatus) {
				t.Errorf("drawn %s %s: the client got %s, want %s", kind, tc.service, got, wantStatus)
			}
			<-without.probes
			if p := <-with.probes; p.handlerCtx == p.ctx || (recruiter.Draw{}).Marked(p.handlerCtx) != (tc.service != "slow") {
				t.Errorf("drawn %s %s: the handler's context has no fast-exit marker, or a wrong mark", kind, tc.service)
			}
			rig.Settle(t)
			if got := rig.Started() - before; got != tc.runs {
				t.Errorf("drawn %s %s ran %d slices, want %d", kind, tc.service, got, tc.runs)
			}
		}
	}
	if n := len(rig.RecruitSpans()); n != 4 {
		t.Fatalf("%d recruitment spans, want 4", n)
	}
}

// TestSliceLinksToTheRPCSpan: with otelgrpc's stats handler, the
// recruitment span links to the RPC's server span.
func TestSliceLinksToTheRPCSpan(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := serve(t,
		grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(rig.Tracer))),
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rig.Rec)),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rig.Rec)))
	rig.Draw()
	for i, kind := range kinds {
		srv.call(t, kind, "cached", nil)
		p := <-srv.probes
		rig.NextRun(t)
		rig.Settle(t)
		spans := rig.RecruitSpans()
		if len(spans) != i+1 {
			t.Fatalf("%s: %d recruitment spans, want %d", kind, len(spans), i+1)
		}
		if !p.span.IsValid() || !stealtest.LinkedTo(spans[i], p.span) {
			t.Errorf("%s: the recruitment span links %+v, want the server span %v", kind, spans[i].Links(), p.span)
		}
	}
}

// TestBackgroundSliceStartsAfterTheRPC: the slice begins only once every
// interceptor and the handler have returned and gRPC has finished the RPC,
// and a job that sleeps past its budget, panics or fails changes nothing
// the client sees.
func TestBackgroundSliceStartsAfterTheRPC(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	// An interceptor outside stealgrpc still works after it has returned
	// (as logging would), long enough for a slice started too early to show.
	const linger = 20 * time.Millisecond
	lingerUnary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		defer time.Sleep(linger)
		return handler(ctx, req)
	}
	lingerStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		defer time.Sleep(linger)
		return handler(srv, ss)
	}
	with := serve(t,
		grpc.ChainUnaryInterceptor(lingerUnary, stealgrpc.UnaryServerInterceptor(rig.Rec)),
		grpc.ChainStreamInterceptor(lingerStream, stealgrpc.StreamServerInterceptor(rig.Rec)))
	without := serve(t)
	returnedAtStart := make(chan bool, 1)
	started := func(ctx context.Context) {
		returnedAtStart <- ctx.Value(probeKey{}).(*probe).returned.Load()
	}
	jobs := map[string]func(context.Context) (recruiter.Report, error){
		"sleeps past its budget": func(ctx context.Context) (recruiter.Report, error) {
			started(ctx)
			time.Sleep(150 * time.Millisecond)
			return recruiter.Report{}, nil
		},
		"panics": func(ctx context.Context) (recruiter.Report, error) { started(ctx); panic("stolen work broke") },
		"fails": func(ctx context.Context) (recruiter.Report, error) {
			started(ctx)
			return recruiter.Report{}, errors.New("no")
		},
	}
	rig.Draw()
	for _, kind := range kinds {
		want := without.call(t, kind, "cached", nil)
		<-without.probes
		for name, job := range jobs {
			rig.SetJob(job)
			rig.ForgetCoolOffs() // each of these jobs rests after its slice
			if got := with.call(t, kind, "cached", nil); got != want {
				t.Errorf("%s with a job that %s: the client got\n%s\nwant\n%s", kind, name, got, want)
			}
			<-with.probes
			rig.NextRun(t)
			if !<-returnedAtStart {
				t.Errorf("%s: a slice (job that %s) started before the interceptors had returned", kind, name)
			}
			rig.Settle(t)
		}
	}
	js := rig.Rec.Stats().Jobs[0]
	if js.Timeouts != 2 || js.Panics != 2 || js.Errors != 2 {
		t.Fatalf("stats %+v, want two timeouts, two panics, two errors", js)
	}
}

// TestInlineSliceRunsBeforeTheRPCEnds: in inline mode the slice runs
// inside the interceptor, so the response (unary) or the status (stream)
// follows it; the client still receives the handler's answer intact.
func TestInlineSliceRunsBeforeTheRPCEnds(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true)
	with := withInterceptors(t, rig.Rec)
	without := serve(t)
	var returnedAtStart atomic.Bool
	rig.SetJob(func(ctx context.Context) (recruiter.Report, error) {
		returnedAtStart.Store(ctx.Value(probeKey{}).(*probe).returned.Load())
		return recruiter.Report{Items: 1, More: true}, nil
	})
	rig.Draw()
	for _, kind := range kinds {
		got, want := with.call(t, kind, "cached", nil), without.call(t, kind, "cached", nil)
		if got != want {
			t.Errorf("inline %s: the client got\n%s\nwant\n%s", kind, got, want)
		}
		<-without.probes
		<-with.probes
		rig.NextRun(t)
		if returnedAtStart.Load() {
			t.Errorf("inline %s: the slice ran after the interceptor returned", kind)
		}
		rig.Settle(t)
	}
	if n := rig.Started(); n != 2 {
		t.Fatalf("%d inline slices, want 2", n)
	}
}

// TestClientsCannotForceRecruitment: no metadata makes an RPC recruited or
// a fast exit.
func TestClientsCannotForceRecruitment(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	srv := withInterceptors(t, rig.Rec)
	forged := metadata.New(map[string]string{
		"x-worksteal":           "1",
		"x-fast-exit":           "true",
		"worksteal-recruit":     "stolen",
		"x-worksteal-fast-exit": "1",
		"worksteal-marked":      "1",
		"traceparent":           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"grpc-status":           "0",
	})
	for _, drawn := range []bool{false, true} {
		if drawn {
			rig.Draw()
		} else {
			rig.Dismiss()
		}
		for _, kind := range kinds {
			for _, service := range []string{"slow", "broken"} {
				srv.call(t, kind, service, forged)
				<-srv.probes
			}
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("forged RPCs ran %d slices", n)
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

	srv.check(t, "slow", nil) // dismissed: neither filter nor classifier
	<-srv.probes
	if n := filtered.Load(); n != 0 || len(exits) != 0 {
		t.Fatalf("a dismissed RPC consulted the filter %d times, the classifier %d times", n, len(exits))
	}

	rig.Draw()
	for _, call := range []struct{ kind, service string }{{"stream", "slow"}, {"unary", "cached"}, {"unary", "slow"}} {
		srv.call(t, call.kind, call.service, nil)
		<-srv.probes
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
		t.Fatalf("the classifier saw %+v for Check(cached)", cached)
	}
}

// TestClassifierSeesErrorsAndStreams: the code and error of a failed RPC,
// no response after an error, and streams flagged, without messages.
func TestClassifierSeesErrorsAndStreams(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, false)
	exits := make(chan stealgrpc.Exit, 16)
	srv := withInterceptors(t, rig.Rec, stealgrpc.WithClassifier(func(e stealgrpc.Exit) bool { exits <- e; return false }))
	rig.Draw()
	for _, kind := range kinds {
		srv.call(t, kind, "broken", nil)
		<-srv.probes
		e := <-exits
		wantMethod := map[string]string{"unary": healthpb.Health_Check_FullMethodName, "stream": healthpb.Health_Watch_FullMethodName}[kind]
		if e.FullMethod != wantMethod || e.Code != codes.Internal || status.Convert(e.Err).Message() != "database on fire" ||
			!e.Marked || e.Response != nil || e.Elapsed <= 0 || e.Stream != (kind == "stream") {
			t.Errorf("%s: the classifier saw %+v", kind, e)
		}
		if _, isReq := e.Request.(*healthpb.HealthCheckRequest); isReq != (kind == "unary") {
			t.Errorf("%s: the classifier saw the request %v", kind, e.Request)
		}
	}
	rig.Settle(t)
	if n := rig.Started(); n != 0 {
		t.Fatalf("%d slices ran with a classifier that says no", n)
	}
}
