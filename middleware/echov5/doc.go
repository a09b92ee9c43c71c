// Package stealecho is worksteal's echo v5 middleware: requests that
// exited fast lend the server to the recruiter for one slice of stolen work.
// It is the module github.com/worksteal/worksteal/middleware/echov5, with
// the API of the echo v4 middleware (github.com/worksteal/worksteal/middleware/echo)
// on echo v5's *echo.Context.
//
//	rec, err := recruiter.New(rdb, recruiter.Config{})
//	err = rec.Register(recruiter.Func("trim-audit-log", trim), recruiter.JobConfig{Every: time.Minute})
//	e := echo.New()
//	e.Use(stealecho.Middleware(rec))
//	e.GET("/items/:id", item) // calls recruiter.MarkFastExit on a cache hit
//
// [MiddlewareWithConfig] takes a [Config] with echo's Skipper and a
// [Classifier]; [Config.ToMiddleware] returns an error where
// MiddlewareWithConfig panics, as echo's own middleware do (Config is an
// echo.MiddlewareConfigurator).
//
// # The hot path
//
// Before the rest of the chain, the middleware draws once
// ([recruiter.Recruiter.Draw]). A dismissed request, the vast majority,
// goes on untouched: the same *echo.Context, request, context and
// ResponseWriter; no allocation, no Redis call, no span, and the Skipper
// is not consulted. (Echo v5 builds its middleware chain once, so a
// dismissed request costs what a request without the middleware costs.)
//
// # A drawn request
//
// Only a drawn request is observed: its request gets a context with the
// fast-exit marker (a handler calls [recruiter.MarkFastExit] after a cache
// hit or an empty result). When the chain returns, the middleware reads
// the status the client gets with [echo.ResolveResponseStatus]: the one
// written if the response is committed, or, for a returned error that
// echo has not written yet, the code echo's DefaultHTTPErrorHandler will
// send (the first [echo.HTTPStatusCoder] in the error's chain, so a
// wrapped echo.ErrNotFound is a 404; 500 for any other error). The
// [Classifier] then decides whether it was a fast exit ([DefaultClassifier]:
// marked, or 204 or 304, and not failed). Nothing a client sends can make
// it one. The error is returned unchanged; echo's Response.After hook,
// which fires on every write, is not used.
//
// # When the slice runs
//
// In background mode, the default, the slice starts once the request's
// context is done, which net/http does when echo's ServeHTTP has returned:
// the response, written by the handler or by echo's HTTPErrorHandler, is
// complete first. So register the middleware outside any middleware that
// gives the request a context it cancels itself (echo's ContextTimeout),
// and inside tracing middleware, whose request span the recruitment span
// then links to.
//
// In inline mode ([recruiter.Config.Inline], for platforms that throttle
// CPU once the response is sent), the middleware flushes a committed
// response through the writer the chain was given, and runs the slice
// before returning: a client reading a response with a Content-Length has
// every byte at once; without one, the response is chunked and its final
// chunk, which ends it, follows the slice (at most the job's budget
// later for a job that stops when its context ends; twice the lock's TTL
// for one that ignores it, when the slice is declared hung). A writer that cannot flush (echo's own *echo.Response panics on
// one; the middleware flushes below it) sends the slice to the background.
// A fast exit returned as an error (say echo.ErrNotFound after
// recruiter.MarkFastExit) is written by echo's HTTPErrorHandler after the
// middleware returns, so in inline mode it reaches the client after the
// slice.
package stealecho
