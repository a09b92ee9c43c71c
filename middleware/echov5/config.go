package stealecho

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/worksteal/worksteal/recruiter"
)

// Config configures [MiddlewareWithConfig]. Only Recruiter is required.
type Config struct {
	// Classifier decides whether a drawn request was a fast exit.
	// Default [DefaultClassifier].
	Classifier Classifier
	// Recruiter receives the slices of fast exits. Required.
	Recruiter *recruiter.Recruiter
	// Skipper excludes requests from recruitment: a request for which it
	// returns true is served untouched. It is consulted after the draw, so
	// dismissed requests never pay for it; the effective rate of a job is
	// its rate times the share of requests the Skipper keeps.
	// Default [middleware.DefaultSkipper] (skip none).
	Skipper middleware.Skipper
}

// Exit is what a classifier knows of a drawn request once the rest of the
// chain has returned.
type Exit struct {
	// Context is the request's *echo.Context, whose request carries the
	// fast-exit marker. Echo reuses contexts: do not keep it past the call.
	Context *echo.Context
	// Status is what the client gets, as [echo.ResolveResponseStatus]
	// tells it: the status written if the response is committed;
	// otherwise, for an error, the code that echo's
	// DefaultHTTPErrorHandler will send (the first [echo.HTTPStatusCoder]
	// in the error's chain, 500 for an error without one); otherwise the
	// response's status, 200 if nothing was written. With a custom
	// HTTPErrorHandler that maps errors otherwise, a Classifier should
	// read Err.
	Status int
	// Err is the error the chain returned, unchanged.
	Err error
	// Marked reports that the handler called recruiter.MarkFastExit.
	Marked bool
	// Elapsed is from the draw to the chain's return.
	Elapsed time.Duration
}

// A Classifier decides whether a drawn request was a fast exit, which
// hands its slice to the recruiter.
type Classifier func(Exit) bool

// DefaultClassifier: the request did not fail, and either the handler
// marked a fast exit or the status is 204 No Content or 304 Not Modified.
// Failed means a 5xx status, or an error that carries no status code
// ([echo.StatusCode] is 0: a handler that wrote its response, then
// returned an error).
func DefaultClassifier(e Exit) bool {
	if e.Status >= http.StatusInternalServerError {
		return false
	}
	if e.Err != nil && echo.StatusCode(e.Err) == 0 {
		return false
	}
	return e.Marked || e.Status == http.StatusNoContent || e.Status == http.StatusNotModified
}
