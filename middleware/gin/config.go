package stealgin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

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
	// Default nil: skip none.
	Skipper gin.Skipper
}

// Exit is what a classifier knows of a drawn request once the rest of the
// chain has returned.
type Exit struct {
	// Context is the request's *gin.Context, whose request carries the
	// fast-exit marker. Gin reuses contexts: do not keep it past the call.
	Context *gin.Context
	// Status is c.Writer.Status() when the chain returned: the status
	// written, or, if nothing was, the one gin writes after the chain
	// (200 unless a handler set another with c.Status or c.AbortWithStatus).
	Status int
	// Errors are those the chain attached with c.Error (c.Errors). Gin
	// reuses them with the context: do not keep them past the call.
	Errors []*gin.Error
	// Marked reports that the handler called recruiter.MarkFastExit on
	// c.Request.Context().
	Marked bool
	// Elapsed is from the draw to the chain's return.
	Elapsed time.Duration
}

// A Classifier decides whether a drawn request was a fast exit, which
// hands its slice to the recruiter.
type Classifier func(Exit) bool

// DefaultClassifier: the request did not fail, and either the handler
// marked a fast exit or the status is 204 No Content or 304 Not Modified.
// Failed means a 5xx status, or an error attached with c.Error (whatever
// the status: gin writes no error response of its own).
func DefaultClassifier(e Exit) bool {
	if e.Status >= http.StatusInternalServerError || len(e.Errors) > 0 {
		return false
	}
	return e.Marked || e.Status == http.StatusNoContent || e.Status == http.StatusNotModified
}
