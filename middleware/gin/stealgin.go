package stealgin

import (
	"errors"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worksteal/worksteal/middleware/internal/httpexit"
	"github.com/worksteal/worksteal/recruiter"
)

// Middleware returns gin middleware that lends fast-exit requests to rec:
// MiddlewareWithConfig(Config{Recruiter: rec}). It panics if rec is nil.
func Middleware(rec *recruiter.Recruiter) gin.HandlerFunc {
	return MiddlewareWithConfig(Config{Recruiter: rec})
}

// MiddlewareWithConfig returns the middleware configured by cfg. It
// panics if cfg is invalid, at set-up rather than on a request; use
// [Config.ToMiddleware] for an error instead.
func MiddlewareWithConfig(cfg Config) gin.HandlerFunc {
	mw, err := cfg.ToMiddleware()
	if err != nil {
		panic(err)
	}
	return mw
}

// ToMiddleware returns the middleware configured by cfg, or an error if
// cfg has no Recruiter.
func (cfg Config) ToMiddleware() (gin.HandlerFunc, error) {
	if cfg.Recruiter == nil {
		return nil, errors.New("stealgin: Config.Recruiter is nil")
	}
	rec, skip, classify := cfg.Recruiter, cfg.Skipper, cfg.Classifier
	if classify == nil {
		classify = DefaultClassifier
	}
	// Gin builds a route's chain once, at registration: this handler is
	// allocated once, and a dismissed request costs the draw alone.
	return func(c *gin.Context) {
		draw := rec.Draw()
		if !draw.Recruited() || skip != nil && skip(c) {
			c.Next()
			return
		}
		serveDrawn(c, draw, classify)
	}, nil
}

// serveDrawn runs the rest of the chain for a drawn request and, after a
// fast exit, sends the response and hands its slice to the recruiter. It
// is apart from the hot path so that the middleware's handler stays small.
//
// The chain writes to a [writer], gin's bookkeeping over a response held
// by httpexit ([httpexit.Hold]) that goes on to gin's own writer when it
// is classified: sent whole after a fast exit, handed on as written after
// any other response, or after a panic (for gin.Recovery to answer as it
// would have).
func serveDrawn(c *gin.Context, draw recruiter.Draw, classify Classifier) {
	began := time.Now()
	ctx := draw.Context(c.Request.Context())
	// A value-only child of the request's context: same deadline, Done
	// channel and values, so it may stay on the request after the chain,
	// for the middleware outside this one.
	c.Request = c.Request.WithContext(ctx)
	below := c.Writer
	w := &writer{ResponseWriter: below, status: below.Status(), size: below.Size(), below: flushing{below}}
	resp := httpexit.Hold(&w.below, c.Request)
	w.held = resp.Writer()
	c.Writer = w
	sent := false
	defer func() {
		c.Writer = below
		if !sent {
			w.handOn(resp)
		}
	}()
	c.Next()

	exit := Exit{Context: c, Status: w.Status(), Errors: c.Errors, Marked: draw.Marked(ctx), Elapsed: time.Since(began)}
	if !classify(exit) {
		return
	}
	sent = true
	w.WriteHeaderNow() // a status set but not written: gin would write it after the chain
	resp.Enlist(ctx, draw)
}
