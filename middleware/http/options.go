package stealhttp

import (
	"net/http"
	"time"
)

// Exit is what a classifier knows of a drawn request once its handler has
// returned.
type Exit struct {
	Request *http.Request // the request, with the fast-exit marker in its context
	Status  int           // the status written; 200 if the handler wrote only a body or nothing
	Marked  bool          // the handler called recruiter.MarkFastExit
	Elapsed time.Duration // from the draw to the handler's return
}

// A Classifier decides whether a drawn request was a fast exit, which
// hands its slice to the recruiter.
type Classifier func(Exit) bool

// DefaultClassifier: the handler marked a fast exit (and did not fail with
// a 5xx), or answered 204 No Content or 304 Not Modified.
func DefaultClassifier(e Exit) bool {
	return e.Marked && e.Status < 500 ||
		e.Status == http.StatusNoContent || e.Status == http.StatusNotModified
}

// Option configures [Middleware].
type Option interface{ apply(*options) }

type options struct {
	classifier Classifier
	filters    []func(*http.Request) bool
}

// keep reports whether every filter keeps r.
func (o *options) keep(r *http.Request) bool {
	for _, f := range o.filters {
		if !f(r) {
			return false
		}
	}
	return true
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClassifier replaces [DefaultClassifier]; nil keeps the default.
func WithClassifier(c Classifier) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.classifier = c
		}
	})
}

// WithFilter excludes requests from recruitment: only requests for which
// every filter returns true may run a slice (as otelhttp's filters add
// up); a nil filter is ignored. Filters are consulted after the draw, so
// dismissed requests never pay for them; the effective rate of a job is
// its rate times the share of requests the filters keep.
func WithFilter(filter func(*http.Request) bool) Option {
	return optionFunc(func(o *options) {
		if filter != nil {
			o.filters = append(o.filters, filter)
		}
	})
}
