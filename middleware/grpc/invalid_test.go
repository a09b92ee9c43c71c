package stealgrpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/worksteal/worksteal/internal/testing/stealtest"
	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

// A nil recruiter is a programming error, caught when the interceptor is
// built, with a message naming the package; nil options are skipped.
func TestNilRecruiterPanicsAtSetUp(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(){
		"UnaryServerInterceptor":  func() { stealgrpc.UnaryServerInterceptor(nil, nil) },
		"StreamServerInterceptor": func() { stealgrpc.StreamServerInterceptor(nil, nil) },
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "stealgrpc") {
					t.Errorf("%s(nil) recovered %v, want a stealgrpc panic", name, v)
				}
			}()
			build()
		}()
	}
}

// Nil arguments to the options mean their defaults: WithClassifier(nil)
// keeps DefaultClassifier, WithFilter(nil) filters nothing.
func TestNilOptionArgumentsKeepTheDefaults(t *testing.T) {
	t.Parallel()
	rig := stealtest.New(t, true) // inline: the slice has run when the call returns
	rig.Draw()
	unary := stealgrpc.UnaryServerInterceptor(rig.Rec, nil, stealgrpc.WithClassifier(nil), stealgrpc.WithFilter(nil))
	info := &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}
	call := func(err error) int {
		rig.ForgetCoolOffs()
		before := rig.Started()
		_, got := unary(context.Background(), nil, info, func(ctx context.Context, _ any) (any, error) {
			recruiter.MarkFastExit(ctx)
			return nil, err
		})
		if got != err {
			t.Fatalf("the interceptor returned %v, want %v", got, err)
		}
		return rig.Started() - before
	}
	if n := call(status.Error(codes.NotFound, "no")); n != 1 {
		t.Fatalf("a marked NotFound started %d slices, want 1", n)
	}
	if n := call(status.Error(codes.Internal, "boom")); n != 0 {
		t.Fatalf("a marked Internal started %d slices, want 0", n)
	}
}
