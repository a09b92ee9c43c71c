package stealgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// serverFailures are the codes that mean the server failed or was cut off
// (DefaultClassifier's doc).
var serverFailures = map[codes.Code]bool{
	codes.Unknown: true, codes.DeadlineExceeded: true, codes.Unimplemented: true, codes.Internal: true,
	codes.Unavailable: true, codes.DataLoss: true, codes.Canceled: true,
}

// FuzzDefaultClassifier: for any code, including ones gRPC does not
// define, and any mark, only a marked RPC that ended with a code meaning
// an answer (OK, NotFound, ... Unauthenticated) is a fast exit; an
// undefined code is no answer.
func FuzzDefaultClassifier(f *testing.F) {
	for c := range uint32(18) {
		f.Add(c, true, false)
	}
	f.Add(uint32(1<<32-1), true, true)
	f.Fuzz(func(t *testing.T, code uint32, marked, stream bool) {
		c := codes.Code(code)
		got := stealgrpc.DefaultClassifier(stealgrpc.Exit{Code: c, Marked: marked, Stream: stream})
		want := marked && c <= codes.Unauthenticated && !serverFailures[c]
		if got != want {
			t.Fatalf("DefaultClassifier(code %v, marked %v) = %v, want %v", c, marked, got, want)
		}
	})
}

// FuzzInterceptorExit: whatever a drawn RPC's handler returns, the
// interceptor passes it through and tells the classifier the code gRPC
// sends for it.
func FuzzInterceptorExit(f *testing.F) {
	for kind := range uint8(5) {
		f.Add(kind, uint32(5), "not found", true)
	}
	f.Add(uint8(1), uint32(0), "", true)
	f.Add(uint8(1), uint32(99), "\xff", true)
	rig := stealtest.New(f, false)
	rig.Draw() // every RPC is drawn; the classifier below runs no slice
	var seen stealgrpc.Exit
	unary := stealgrpc.UnaryServerInterceptor(rig.Rec, stealgrpc.WithClassifier(func(e stealgrpc.Exit) bool { seen = e; return false }))
	info := &grpc.UnaryServerInfo{FullMethod: "/fuzz.Service/Method"}

	f.Fuzz(func(t *testing.T, kind uint8, code uint32, msg string, mark bool) {
		var err error
		want := codes.OK
		switch kind % 5 {
		case 1:
			err = status.Error(codes.Code(code), msg) // nil for OK
			want = codes.Code(code)
		case 2:
			err, want = errors.New(msg), codes.Unknown
		case 3:
			err, want = fmt.Errorf("%s: %w", msg, context.Canceled), codes.Canceled
		case 4:
			err, want = context.DeadlineExceeded, codes.DeadlineExceeded
		}
		seen = stealgrpc.Exit{}
		answer := &healthpb.HealthCheckResponse{}
		resp, got := unary(context.Background(), "req", info, func(ctx context.Context, req any) (any, error) {
			if mark {
				recruiter.MarkFastExit(ctx)
			}
			return answer, err
		})
		if resp != any(answer) || got != err {
			t.Fatalf("the interceptor changed the result: %v, %v; want %v, %v", resp, got, answer, err)
		}
		if seen.Code != want || seen.Marked != mark || seen.FullMethod != info.FullMethod || (err == nil) != (seen.Response != nil) {
			t.Fatalf("classifier saw %+v; want code %v, marked %v", seen, want, mark)
		}
		if serverFailures[seen.Code] && stealgrpc.DefaultClassifier(seen) {
			t.Fatalf("DefaultClassifier calls code %v a fast exit", seen.Code)
		}
	})
}
