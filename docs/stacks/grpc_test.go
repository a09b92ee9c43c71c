package stacks

import (
	"google.golang.org/grpc"

	stealgrpc "github.com/worksteal/worksteal/middleware/grpc"
	"github.com/worksteal/worksteal/recruiter"
)

func grpcServer(rec *recruiter.Recruiter) *grpc.Server {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec)),
		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec)))
	// In a handler, on a cache hit: recruiter.MarkFastExit(ctx); in a stream's: stream.Context().
	return srv
}
