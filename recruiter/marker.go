package recruiter

import (
	"context"
	"sync/atomic"
)

type markerKey struct{}

// marker is written by the handler's goroutine (or any it starts) and read
// by the middleware after the handler returns, hence atomic.
type marker struct{ fast atomic.Bool }

// WithFastExitMarker returns a context that [MarkFastExit] can mark. The
// middleware gives it to drawn requests only, so dismissed ones pay nothing.
func WithFastExitMarker(ctx context.Context) context.Context {
	return context.WithValue(ctx, markerKey{}, &marker{})
}

// MarkFastExit lets a handler say that its response was cheap (a cache hit,
// an empty result): a drawn request then hands its slice to the recruiter.
// On a context without a marker it does nothing, so handlers call it
// unconditionally.
func MarkFastExit(ctx context.Context) {
	if m, ok := ctx.Value(markerKey{}).(*marker); ok {
		m.fast.Store(true)
	}
}

// FastExitMarked reports whether [MarkFastExit] was called on ctx, or on a
// context derived from it.
func FastExitMarked(ctx context.Context) bool {
	m, ok := ctx.Value(markerKey{}).(*marker)
	return ok && m.fast.Load()
}
