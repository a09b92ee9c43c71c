// Package catalogpb is the example's gRPC catalog service, generated from
// catalog.proto. The generated files are committed so that running the
// example needs no protoc.
package catalogpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative catalog.proto
