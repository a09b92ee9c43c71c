package recruiter

import (
	"context"
	"sync/atomic"
)

type markerKey struct{}

// marker is written by the handler's goroutine (or any it starts) and read
// by the middleware after the handler returns, hence atomic. outer is the
// marker of an enclosing draw (another recruiter's middleware around this
// one), which a mark reaches too.
type marker struct {
	fast  atomic.Bool
	outer *marker
}

func markerOf(ctx context.Context) *marker {
	if ctx == nil {
		return nil
	}
	m, _ := ctx.Value(markerKey{}).(*marker)
	return m
}

// withMarker is given to drawn requests only, so dismissed ones pay nothing.
func withMarker(ctx context.Context) context.Context {
	return context.WithValue(ctx, markerKey{}, &marker{outer: markerOf(ctx)})
}

func marked(ctx context.Context) bool {
	m := markerOf(ctx)
	return m != nil && m.fast.Load()
}

// MarkFastExit lets a handler say that its response was cheap (a cache hit,
// an empty result): a drawn request then hands its slice to the recruiter.
// It marks every draw whose context ctx derives from. On a context without
// a marker (a dismissed request) it does nothing, so handlers call it
// unconditionally.
func MarkFastExit(ctx context.Context) {
	for m := markerOf(ctx); m != nil; m = m.outer {
		m.fast.Store(true)
	}
}
