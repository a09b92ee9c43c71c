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
// upgrades work as before. After the handler, [DefaultClassifier] (or
// [WithClassifier]) decides whether it was a fast exit; nothing a client
// sends can make it one.
//
// # When the slice runs
//
// In background mode, the default, the slice starts once the server has
// finished the handler (the request context is done), on its own
// goroutine: the response, its headers, body and the timing of its last
// byte are the handler's alone. In inline mode ([recruiter.Config.Inline],
// for platforms that throttle CPU once the response is sent), the
// middleware flushes the response and runs the slice before returning. On
// HTTP/1.1, a client reading a response whose handler set a Content-Length
// has every byte at once; without one, the flush makes the response
// chunked and its final chunk, which ends it, follows the slice. On HTTP/2
// a stream ends when the handler returns, so every response's end follows
// the slice. "Follows" means at most the job's budget plus two of the
// recruiter's Redis calls (each bounded by RedisTimeout) later, for a job
// that stops when its context ends; one that ignores it holds the response
// until the slice is declared hung, at twice the lock's TTL (budget +
// max(budget/2, 250ms)).
package stealhttp
