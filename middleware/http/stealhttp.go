package stealhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"

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
	status, hijacked := 0, false
	capture := func(code int) {
		// 1xx are interim (103 Early Hints); the first final status counts.
		if status == 0 && code >= 200 {
			status = code
		}
	}
	ww := httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) { capture(code); next(code) }
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(b []byte) (int, error) { capture(http.StatusOK); return next(b) }
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) { capture(http.StatusOK); return next(src) }
		},
		// A flush commits the status written so far: 200 if none.
		Flush: func(next httpsnoop.FlushFunc) httpsnoop.FlushFunc {
			return func() { capture(http.StatusOK); next() }
		},
		Hijack: func(next httpsnoop.HijackFunc) httpsnoop.HijackFunc {
			return func() (net.Conn, *bufio.ReadWriter, error) {
				conn, rw, err := next()
				hijacked = hijacked || err == nil
				return conn, rw, err
			}
		},
	})
	next.ServeHTTP(ww, r)

	exit := Exit{Request: r, Status: status, Marked: draw.Marked(r.Context()), Elapsed: time.Since(began)}
	if exit.Status == 0 {
		exit.Status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	if !classify(exit) {
		return
	}
	draw.Enlist(r.Context(), func() error {
		if hijacked {
			return nil // the connection is the handler's: nothing of ours to send
		}
		return http.NewResponseController(w).Flush()
	})
}
