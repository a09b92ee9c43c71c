// Package stealgin is worksteal's gin middleware: requests that exited
// fast lend the server to the recruiter for one slice of stolen work.
//
//	rec, err := recruiter.New(rdb, recruiter.Config{})
//	err = rec.Register(recruiter.Func("trim-audit-log", trim), recruiter.JobConfig{Every: time.Minute})
//	r := gin.New()
//	r.Use(gin.Recovery(), stealgin.Middleware(rec))
//	r.GET("/items/:id", item) // calls recruiter.MarkFastExit(c.Request.Context()) on a cache hit
//
// [MiddlewareWithConfig] takes a [Config] with a gin.Skipper and a
// [Classifier]; [Config.ToMiddleware] returns an error where
// MiddlewareWithConfig panics. Register it with r.Use on the engine, or
// on a group (r.Group("/api").Use(...)).
//
// # Marking a fast exit
//
// A handler marks c.Request.Context(), as a net/http handler marks
// r.Context(). A *gin.Context is a context.Context too, but its values
// reach the request's only with gin's engine.ContextWithFallback set:
// without it, recruiter.MarkFastExit(c) marks nothing.
//
// # The hot path
//
// Before the rest of the chain, the middleware draws once
// ([recruiter.Recruiter.Draw]). A dismissed request, the vast majority,
// goes on untouched: the same *gin.Context, writer, request and context;
// no allocation, no Redis call, no span, and the Skipper is not
// consulted. Gin builds a route's chain once, when the route is
// registered, so the middleware costs a dismissed request the draw alone.
//
// # A drawn request
//
// Only a drawn request is observed: its request gets a context with the
// fast-exit marker, and the chain gets a writer of its own, which keeps
// gin's bookkeeping (Status, Size, Written, WriteHeaderNow, Flush,
// Hijack, Pusher, CloseNotify; Unwrap for http.ResponseController) and
// holds the response back while its body fits 2,048 bytes and nothing
// flushed it (net/http holds such a response in its buffer until the
// handler returns anyway). When the chain returns, the middleware reads
// the status from that writer: the one written, or the one gin writes
// after the chain (set by c.Status or c.AbortWithStatus without a body;
// 200 if none). The [Classifier] then decides whether it was a fast exit
// ([DefaultClassifier]: marked, or 204 or 304, and neither a 5xx nor an
// error attached with c.Error). Nothing a client sends can make it one.
// Any other response is handed on to gin's writer as it was written, and
// gin ends it as it would have; so is the response of a chain that
// panicked, before gin.Recovery (registered outside) answers it.
//
// A middleware outside this one that changes the status after the chain,
// when nothing was written, is not seen: the classifier sees the status
// as the chain left it, and a fast exit's is written before the
// middleware returns.
//
// # When the slice runs
//
// A fast exit's response is sent before the middleware returns: the
// status, if the chain set one without writing it, then what was held,
// with a Content-Length if it has none (the one net/http sets itself for
// a body that small), and a flush. On HTTP/1.1 the whole response is then
// on the connection, but for a body past 2,048 bytes without a
// Content-Length, one the handler flushed, or one with trailers: chunked,
// as without the middleware, its last chunk follows. On HTTP/2 the
// stream's end follows (its bound is stealhttp's). The middleware
// therefore belongs outside middleware that rewrites the body
// (gin-contrib/gzip), so that what it holds and measures is what the
// client gets.
//
// In background mode, the default, the slice starts once the request's
// context is done, which net/http does when gin's ServeHTTP has returned
// (or sooner, when the client closes its connection once it has the whole
// response). So register the middleware outside any middleware that gives
// the request a context it cancels itself (a timeout middleware), and
// inside tracing middleware (otelgin), whose request span the recruitment
// span then links to.
//
// In inline mode ([recruiter.Config.Inline], for platforms that throttle
// CPU once the response is sent), the middleware sends the response the
// same way, then runs the slice before returning: the client has the
// whole response first, but for a chunked response's last chunk, which
// follows the slice (at most the job's budget later for a job that stops
// when its context ends; twice the lock's TTL for one that ignores it,
// when the slice is declared hung). A writer that cannot flush sends
// the slice to the background.
package stealgin
