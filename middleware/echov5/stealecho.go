package stealecho

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/worksteal/worksteal/recruiter"
)

// Middleware returns echo middleware that lends fast-exit requests to rec:
// MiddlewareWithConfig(Config{Recruiter: rec}). It panics if rec is nil.
func Middleware(rec *recruiter.Recruiter) echo.MiddlewareFunc {
	return MiddlewareWithConfig(Config{Recruiter: rec})
}

// MiddlewareWithConfig returns the middleware configured by cfg. As echo's
// own XxxWithConfig functions do, it panics if cfg is invalid; use
// [Config.ToMiddleware] for an error instead.
func MiddlewareWithConfig(cfg Config) echo.MiddlewareFunc {
	mw, err := cfg.ToMiddleware()
	if err != nil {
		panic(err)
	}
	return mw
}

// ToMiddleware returns the middleware configured by cfg, or an error if
// cfg has no Recruiter. It makes Config an echo.MiddlewareConfigurator.
func (cfg Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	if cfg.Recruiter == nil {
		return nil, errors.New("stealecho: Config.Recruiter is nil")
	}
	s := &stealer{
		rec:      cfg.Recruiter,
		classify: cfg.Classifier,
		skip:     cfg.Skipper,
	}
	if s.classify == nil {
		s.classify = DefaultClassifier
	}
	if s.skip == nil {
		s.skip = middleware.DefaultSkipper
	}
	// Echo v5 builds its chain once, when middleware is added: the handler
	// below is allocated then, not per request.
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			draw := s.rec.Draw()
			if !draw.Recruited() || s.skip(c) {
				return next(c)
			}
			return s.serveDrawn(c, draw, next)
		}
	}, nil
}

type stealer struct {
	rec      *recruiter.Recruiter
	classify Classifier
	skip     middleware.Skipper
}

// serveDrawn observes a drawn request and hands its slice on after a fast
// exit. It is apart from the hot path so that the closure stays small.
func (s *stealer) serveDrawn(c *echo.Context, draw recruiter.Draw, next echo.HandlerFunc) error {
	began := time.Now()
	// The marker context is a value-only child of the request's: same
	// deadline, Done channel and values, so leaving it on the request after
	// the chain (for the error handler and outer middleware) changes nothing.
	ctx := draw.Context(c.Request().Context())
	c.SetRequest(c.Request().WithContext(ctx))
	// The writer as the chain got it: middleware inside (echo's Gzip) may
	// swap its own in and return it to a pool before the chain returns.
	w := c.Response()
	err := next(c)

	resp, st := echo.ResolveResponseStatus(c.Response(), err)
	exit := Exit{
		Context: c,
		Status:  st,
		Err:     err,
		Marked:  draw.Marked(ctx),
		Elapsed: time.Since(began),
	}
	if !s.classify(exit) {
		return err
	}
	draw.Enlist(ctx, func() error {
		// An error's response is written by echo's HTTPErrorHandler after
		// the chain, so there is nothing to send yet: flushing would commit
		// an empty 200 in its place.
		if err != nil || resp == nil || !resp.Committed {
			return nil
		}
		return flush(w)
	})
	return err
}

// flush sends what w holds to the client. echo's own *Response panics when
// its writer cannot flush; below it, http.ResponseController reports that
// as an error instead, and the recruiter then runs the slice in the
// background. *Response buffers nothing, so flushing its writer is the same.
func flush(w http.ResponseWriter) error {
	if r, ok := w.(*echo.Response); ok {
		w = r.ResponseWriter
	}
	return http.NewResponseController(w).Flush()
}
