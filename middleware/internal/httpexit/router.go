package httpexit

import (
	"net/http"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// Router is a router framework on net/http (echo v4, echo v5) as the flow
// of a drawn request needs it: C is the type of its request contexts, H
// the type of its handlers.
type Router[C any, H ~func(C) error] struct {
	// Classify is the adapter's classifier, given the request's outcome.
	Classify func(C, Outcome) bool
	// Request and SetRequest read and replace the context's request.
	Request    func(C) *http.Request
	SetRequest func(C, *http.Request)
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

// ServeDrawn runs the chain (next) for a drawn request and, after a fast
// exit, hands its slice to the recruiter. The request's context carries
// the fast-exit marker, its response is held ([Hold]) until it is
// classified, and the response of a fast exit returned as an error is
// written here, by the framework's error writer, so that it too is sent
// whole before the slice; the error is returned unchanged (the framework's
// error writer then finds the response committed, and leaves it).
func (rt *Router[C, H]) ServeDrawn(c C, draw recruiter.Draw, next H) error {
	began := time.Now()
	req := rt.Request(c)
	ctx := draw.Context(req.Context())
	// The marker context is a value-only child of the request's: same
	// deadline, Done channel and values, so leaving it on the request after
	// the chain (for the error writer and outer middleware) changes nothing.
	rt.SetRequest(c, req.WithContext(ctx))
	w := rt.Writer(c)
	resp := Hold(w, req.Method == http.MethodHead)
	rt.SetWriter(c, resp.Writer())
	err := next(c)

	status, committed := rt.Status(c, err)
	if !rt.Classify(c, Outcome{Status: status, Err: err, Marked: draw.Marked(ctx), Elapsed: time.Since(began)}) {
		rt.SetWriter(c, w)
		resp.Release()
		return err
	}
	if err != nil && !committed {
		// Middleware inside (echo's Gzip) put back the writer they found.
		rt.SetWriter(c, resp.Writer())
		rt.WriteError(c, err)
	}
	rt.SetWriter(c, w)
	resp.Enlist(ctx, draw)
	return err
}
