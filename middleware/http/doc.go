// Package stealhttp is worksteal's net/http middleware: requests that
// exited fast lend the server to the recruiter for one slice of stolen work.
//
//	mux := http.NewServeMux()
//	handler := stealhttp.Middleware(rec)(mux)
//
// # The hot path
//
// Before the handler, the middleware draws once ([recruiter.Recruiter.Draw]).
// A dismissed request, the vast majority, reaches the handler untouched:
// the same ResponseWriter, request and context; no allocation, no Redis
// call, no span.
//
// # A drawn request
//
// Only a drawn request is observed: its context carries the fast-exit
// marker (a handler calls [recruiter.MarkFastExit] after a cache hit or an
// empty result), and its status is captured by a ResponseWriter wrapper that
// keeps every optional interface of the original (http.Flusher,
// http.Hijacker, io.ReaderFrom, http.Pusher) and unwraps for
// http.ResponseController, so streaming, server-sent events and websocket
// upgrades work as before. The wrapper holds the response back while its
// body fits 2,048 bytes and the handler has not flushed it, as net/http
// holds such a response in its own buffer until the handler returns
// anyway; a write it holds reports success. After the handler,
// [DefaultClassifier] (or [WithClassifier]) decides whether it was a fast
// exit; nothing a client sends can make it one. Any other response is
// then handed on as the handler wrote it.
//
// # When the slice runs
//
// A fast exit's response is sent before the handler returns: what was
// held, with a Content-Length when the handler set none (the one net/http
// would have set), then a flush. In background mode, the default, the
// slice then starts on its own goroutine once the request's context is
// done: when net/http has finished with the handler, or sooner if the
// client closes its connection once it has the whole response.
//
//   - HTTP/1.1: the whole response is on the connection before the slice
//     starts when it was held (a body of at most 2,048 bytes) or the
//     handler set its Content-Length. A larger body without one, a
//     response the handler flushed, or one with trailers, is chunked as
//     without the middleware: all but its last chunk (the 5 bytes that end
//     it, and any trailers) is on the connection first, and net/http
//     writes the last chunk once the handler has returned, so it may follow
//     the slice's start.
//   - HTTP/2: the headers and body are handed to the connection before
//     the slice starts, but net/http ends a stream (an empty DATA frame)
//     only after the handler has returned and it has cancelled the
//     request's context, so the end may follow the slice's start: on
//     loopback, on a shared 2-core machine, it did for up to 3.4 % of fast
//     exits, by at most 0.71 ms (p99 at most 0.11 ms;
//     BenchmarkEndAfterSliceStart, BENCHMARKS.md). A 204 or 304 is not
//     flushed (its headers would go without the stream's end, and the
//     client would read a body of unknown length): it goes out whole once
//     the handler has returned, as without the middleware, so it too may
//     follow the slice's start.
//   - Under a writer that cannot flush (http.TimeoutHandler's), the
//     response is sent by the writer's owner after the middleware, and
//     the slice may start before it.
//
// The client gets the response it gets without the middleware: status,
// headers, body and trailers, and for a held response the Content-Length
// that net/http sets itself for a body that small.
//
// In inline mode ([recruiter.Config.Inline], for platforms that throttle
// CPU once the response is sent), the middleware sends the response the
// same way, then runs the slice before returning: the client has the
// whole response first, but for the last chunk of a chunked HTTP/1.1
// response and the end of an HTTP/2 stream, which follow the slice. A
// writer that cannot flush, or a 204 or 304 on HTTP/2, sends the slice to
// the background instead.
// "Follows" means at most the job's budget plus two of the recruiter's
// Redis calls (each bounded by RedisTimeout) later, for a job that stops
// when its context ends; one that ignores it holds the response until the
// slice is declared hung, at twice the lock's TTL (budget +
// max(budget/2, 250ms)).
package stealhttp
