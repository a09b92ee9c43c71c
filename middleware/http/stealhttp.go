package stealhttp

import (
	"net/http"
	"time"

	"github.com/worksteal/worksteal/middleware/internal/httpexit"
	"github.com/worksteal/worksteal/recruiter"
)

// Middleware returns net/http middleware that lends fast-exit requests to
// rec. Nil options are ignored. A nil rec is a programming error: it
// panics here, at set-up, rather than on every request.
func Middleware(rec *recruiter.Recruiter, opts ...Option) func(http.Handler) http.Handler {
	if rec == nil {
		panic("stealhttp: Middleware needs a *recruiter.Recruiter, got nil")
	}
	o := options{classifier: DefaultClassifier}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			draw := rec.Draw()
			if !draw.Recruited() || !o.keep(r) {
				next.ServeHTTP(w, r)
				return
			}
			serveDrawn(draw, o.classifier, next, w, r)
		})
	}
}

// serveDrawn observes a drawn request and hands its slice on after a fast
// exit. It is apart from the hot path so that the closure stays small.
func serveDrawn(draw recruiter.Draw, classify Classifier, next http.Handler, w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	r = r.WithContext(draw.Context(r.Context()))
	resp := httpexit.Hold(w, r)
	returned := false
	defer func() {
		if !returned {
			resp.Release() // a panic: what the handler wrote goes on, as without the middleware
		}
	}()
	next.ServeHTTP(resp.Writer(), r)
	returned = true

	exit := Exit{Request: r, Status: resp.Status(), Marked: draw.Marked(r.Context()), Elapsed: time.Since(began)}
	if !classify(exit) {
		resp.Release()
		return
	}
	resp.Enlist(r.Context(), draw)
}
