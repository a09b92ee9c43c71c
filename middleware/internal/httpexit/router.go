package httpexit

import (
	"net/http"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// Context is what the flow needs of a router framework's request context.
type Context interface {
	Request() *http.Request
	SetRequest(*http.Request)
}

// Router is the rest of what the flow needs of a router framework on
// net/http (echo v4, echo v5), whose request contexts are of type C.
type Router[C Context] struct {
	// Status is the status the client gets for a chain that returned err,
	// and whether the response was written (committed) by then.
	Status func(c C, err error) (status int, committed bool)
	// WriteError writes the response of an error the chain returned, as
	// the framework does after the chain.
	WriteError func(C, error)
	// Writer and SetWriter read and replace the writer the framework
	// writes the response to (below its own response type).
	Writer    func(C) http.ResponseWriter
	SetWriter func(C, http.ResponseWriter)
}

// Outcome is what the flow knows of a drawn request once the chain has
// returned.
type Outcome struct {
	Status  int
	Err     error
	Marked  bool
	Elapsed time.Duration
}

// Stealer is a drawn request's flow in a router framework whose handlers
// are of type H. The adapter's middleware draws before the chain, and
// hands a drawn request to ServeDrawn; it keeps that hot path in code of
// its own, not generic, so that its handler captures no dictionary of
// this instantiation and is as small as any (echo v4 allocates it on
// every request).
type Stealer[C Context, H ~func(C) error] struct {
	// Classify is the adapter's classifier, given the request's outcome.
	Classify  func(C, Outcome) bool
	Recruiter *recruiter.Recruiter
	Router    *Router[C]
	// Skip excludes requests from recruitment, after the draw; nil keeps
	// every request.
	Skip func(C) bool
}

// ServeDrawn runs the chain (next) for a drawn request and, after a fast
// exit, hands its slice to the recruiter. The request's context carries
// the fast-exit marker, its response is held ([Hold]) until it is
// classified, and the response of a fast exit returned as an error is
// written here, by the framework's error writer, so that it too is sent
// whole before the slice; the error is returned unchanged (the framework's
// error writer then finds the response committed, and leaves it).
func (s *Stealer[C, H]) ServeDrawn(c C, draw recruiter.Draw, next H) error {
	began := time.Now()
	req := c.Request()
	ctx := draw.Context(req.Context())
	// The marker context is a value-only child of the request's: same
	// deadline, Done channel and values, so leaving it on the request after
	// the chain (for the error writer and outer middleware) changes nothing.
	c.SetRequest(req.WithContext(ctx))
	rt := s.Router
	w := rt.Writer(c)
	resp := Hold(w, req)
	rt.SetWriter(c, resp.Writer())
	returned := false
	defer func() {
		if !returned {
			// The chain panicked: the framework's writer and what the chain
			// wrote go back, as without the middleware, so that a recovering
			// middleware outside answers as it would (a 500, not an empty 200).
			rt.SetWriter(c, w)
			resp.Release()
		}
	}()
	err := next(c)
	returned = true

	status, committed := rt.Status(c, err)
	if !s.Classify(c, Outcome{Status: status, Err: err, Marked: draw.Marked(ctx), Elapsed: time.Since(began)}) {
		rt.SetWriter(c, w)
		resp.Release()
		return err
	}
	if err != nil && !committed {
		rt.SetWriter(c, resp.Writer()) // the chain may have left another writer in place
		rt.WriteError(c, err)
	}
	rt.SetWriter(c, w)
	resp.Enlist(ctx, draw)
	return err
}
