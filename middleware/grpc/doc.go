// Package stealgrpc is worksteal's gRPC middleware: RPCs that exited fast
// lend the server to the recruiter for one slice of stolen work.
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(stealgrpc.UnaryServerInterceptor(rec)),
//		grpc.ChainStreamInterceptor(stealgrpc.StreamServerInterceptor(rec)),
//	)
//
// Both interceptors compose with others in grpc.ChainUnaryInterceptor and
// grpc.ChainStreamInterceptor. With otelgrpc's stats handler
// (grpc.StatsHandler(otelgrpc.NewServerHandler())), the RPC's context
// carries its server span, and each recruitment span links to it.
//
// # The hot path
//
// Before the handler, the interceptor draws once ([recruiter.Recruiter.Draw]).
// A dismissed RPC, the vast majority, reaches the handler untouched: the
// same context, request and ServerStream; no allocation, no Redis call, no
// span.
//
// # A drawn RPC
//
// Only a drawn RPC is observed: its context carries the fast-exit marker
// (a handler calls [recruiter.MarkFastExit] after a cache hit or an empty
// result; a streaming handler on its stream's Context). After the
// handler, [DefaultClassifier] (or [WithClassifier]) decides whether it
// was a fast exit, from the method, the request and response (unary), the
// code the client receives and whether the handler marked it;
// [WithFilter] keeps methods out of recruitment. Nothing a client sends,
// in metadata or messages, can make an RPC recruited or a fast exit. The
// interceptor returns the handler's response and error as they are.
//
// # The code
//
// [Exit.Code] is the code the client receives, as far as an interceptor
// can know it when the handler has returned:
//
//   - the RPC's context ended first: DeadlineExceeded if its deadline has
//     passed (the client's, which is no later, has passed too: it gets
//     DeadlineExceeded whatever the handler returned), else Canceled: the
//     client cancelled or went away; or its deadline passed on its side
//     first (the server's is set on the request's arrival, a little later)
//     and the handler returned in between, when the client got
//     DeadlineExceeded: a failure either way to DefaultClassifier;
//   - a stream whose SendMsg failed (a message that does not marshal, one
//     past the server's size limit): that failure's code, with which gRPC
//     ended the RPC at once, whatever the handler returned afterwards;
//   - a unary response that does not marshal (say a string field that is
//     not UTF-8): Internal, as gRPC then answers. Only a drawn RPC's
//     response is marshalled once more to know it, with the codec
//     registered for the RPC's content-subtype ("proto" by default); a
//     server that forces a codec (grpc.ForceServerCodecV2) is checked
//     with the registered one;
//   - otherwise the handler's error's code: a status error's own, Canceled
//     or DeadlineExceeded for a context error, Unknown for another; OK for
//     none.
//
// What happens after the interceptor returns is not seen: a unary
// response larger than the server's MaxSendMsgSize (ResourceExhausted), a
// compressor's failure, a deadline that passes or a connection that
// breaks while gRPC sends the answer.
//
// # When the slice runs
//
// In background mode, the default and the one to use with gRPC, the slice
// starts once gRPC has finished the RPC, on its own goroutine: gRPC
// cancels the RPC's context when it hands the status to the transport,
// after the response and after every interceptor has returned. The
// response, its metadata, trailers and timing are the handler's alone.
// A client that cancels ends the RPC early; its slice then starts when
// the handler has returned.
//
// In inline mode ([recruiter.Config.Inline], for platforms that throttle
// CPU once a response is sent) the slice runs on the RPC's goroutine
// before the interceptor returns, and gRPC cannot send what comes after
// the interceptor any earlier: a unary RPC's response, and a stream's
// status and trailers (messages the stream sent are already on their
// way), reach the client only after the slice, at most the job's budget
// later (twice the lock's TTL for a job that ignores its context, when
// the slice is declared hung). Prefer background mode for gRPC servers wherever the platform
// allows it.
package stealgrpc
