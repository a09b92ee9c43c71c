// Package ring keeps the last values added to a buffer of fixed size: the
// recruiter's slice durations and recent recruitments, the dashboard's
// samples.
//
// A [Ring] is not safe for concurrent use: each caller guards it with its
// own lock, the one that guards the state the ring goes with.
package ring

import "slices"

// Ring keeps the last Cap values added. Make one with [New].
type Ring[T any] struct {
	buf  []T
	next int // where the next Add writes
	n    int // values kept, at most len(buf)
}

// New returns a ring that keeps the last size values. A size below 1 is a
// programming error: New panics, as make does with a negative length.
func New[T any](size int) *Ring[T] {
	if size < 1 {
		panic("ring: size below 1")
	}
	return &Ring[T]{buf: make([]T, size)}
}

// Add keeps v, dropping the oldest value if the ring is full. It does not
// allocate.
func (r *Ring[T]) Add(v T) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next = 0
	}
	r.n = min(r.n+1, len(r.buf))
}

// Len is how many values the ring keeps now.
func (r *Ring[T]) Len() int { return r.n }

// Cap is how many values the ring keeps at most.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Slice returns the values kept, oldest first, in a new slice (empty, not
// nil, when there are none).
func (r *Ring[T]) Slice() []T {
	out := make([]T, 0, r.n)
	start := r.next - r.n
	if start < 0 { // the values wrap around the end of buf
		out = append(out, r.buf[len(r.buf)+start:]...)
		start = 0
	}
	return append(out, r.buf[start:r.next]...)
}

// NewestFirst returns the values kept, newest first, in a new slice (empty,
// not nil, when there are none).
func (r *Ring[T]) NewestFirst() []T {
	out := r.Slice()
	slices.Reverse(out)
	return out
}
