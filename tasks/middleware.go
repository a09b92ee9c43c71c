package tasks

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/worksteal/worksteal/jobs"
)

// Handler is a task's handler as a [Middleware] sees it: the task's type
// and its arguments as the codec encoded them in, its result encoded out.
// Behind it is a typed handler (which decodes and encodes), a [Raw] one or
// [Mux.HandleUnknown]'s; the rest of the task is in ctx ([InfoFrom]).
type Handler func(ctx context.Context, typ string, args []byte) (result []byte, err error)

// Middleware wraps a handler: it returns the Handler that runs in its
// place, which calls next (or not) with a context derived from its own.
// See [Mux.Use].
type Middleware func(next Handler) Handler

// Use adds middleware around every handler of m: typed, [Raw] and
// [Mux.HandleUnknown]'s, registered before or after. The first added is
// the outermost: Use(a, b) runs a, then b, then the handler. Between them
// and the handler are the Mux's own: a type's [Timeout], then the
// recovery of panics, innermost, so that every middleware sees a panic,
// or a timeout, as the error of the attempt (an error wrapping
// [jobs.ErrHandlerPanic] or [ErrTimeout]). Around them all is the Mux's
// log of failures (see [WithLogger]), which sees what the attempt's
// outcome is once every middleware returned.
//
// A middleware is called when the chains are built (at Use, and at each
// registration after it), once per type, not once per task: a chain
// costs no allocation per task beyond the middleware's own. Use is safe
// while the Mux's jobs run: the chains are copied on write, as the
// handlers are, so a task started before Use returned runs without the
// new middleware, and every task started after it with it. A nil m, a
// nil middleware or one that returns a nil Handler fails with
// [ErrInvalidArgument], and adds nothing (on a Mux without handlers yet,
// the registrations fail instead).
func (m *Mux) Use(mw ...Middleware) error {
	if m == nil {
		return fmt.Errorf("%w: nil Mux", ErrInvalidArgument)
	}
	for i, w := range mw {
		if w == nil {
			return fmt.Errorf("%w: middleware %d is nil", ErrInvalidArgument, i)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	all := append(m.middleware[:len(m.middleware):len(m.middleware)], mw...)
	var table map[string]handler
	if old := m.handlers.Load(); old != nil {
		table = make(map[string]handler, len(*old))
		for typ, h := range *old {
			if h.chain = m.chain(h.run, h.cfg, h.counts, all); h.chain == nil {
				return errNilHandler
			}
			table[typ] = h
		}
	}
	var unknown *handler
	if u := m.unknown.Load(); u != nil {
		h := *u
		if h.chain = m.chain(h.run, h.cfg, h.counts, all); h.chain == nil {
			return errNilHandler
		}
		unknown = &h
	}
	m.middleware = all
	if table != nil {
		m.handlers.Store(&table)
	}
	if unknown != nil {
		m.unknown.Store(unknown)
	}
	return nil
}

var errNilHandler = fmt.Errorf("%w: a middleware returned a nil Handler", ErrInvalidArgument)

// chain is run with the middleware around it, and the Mux's own (see
// Use), from the innermost out; nil when a middleware returned nil.
func (m *Mux) chain(run handlerFunc, cfg handleConfig, c *typeCounts, mw []Middleware) Handler {
	codec := m.codec
	h := recoverPanics(func(ctx context.Context, typ string, args []byte) ([]byte, error) {
		return run(ctx, codec, typ, args)
	})
	if cfg.timeout > 0 {
		h = withTimeout(cfg.timeout, c, h)
	}
	for i := len(mw) - 1; i >= 0; i-- {
		if h = mw[i](h); h == nil {
			return nil
		}
	}
	return m.logFailures(h)
}

// panicError is a handler's panic as its attempt's error: its text is the
// cause the dead letters keep, and its stack goes to the log.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("%v: %v", jobs.ErrHandlerPanic, p.value) }
func (p *panicError) Unwrap() error { return jobs.ErrHandlerPanic }

// recoverPanics is the Mux's own innermost middleware: a panic of the
// handler fails its attempt alone, with an error wrapping
// [jobs.ErrHandlerPanic], which the middleware around it see.
func recoverPanics(next Handler) Handler {
	return func(ctx context.Context, typ string, args []byte) (result []byte, err error) {
		defer func() {
			if v := recover(); v != nil {
				result, err = nil, &panicError{value: v, stack: debug.Stack()}
			}
		}()
		return next(ctx, typ, args)
	}
}
