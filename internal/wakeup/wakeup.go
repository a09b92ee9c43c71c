// Package wakeup tells the jobs that work a queue in this process that
// something was enqueued into it, so that a task starts within
// milliseconds rather than at its job's next planned visit. The queue's
// storage rings a queue's [Bell] after each enqueue that left an item
// pending (and each ack that enqueued a chain's next step); a recruiter
// listens to the bell of each job that has one.
//
// Bells are keyed by the queue's hash tag, which names its prefix and
// name: every listener in this process for a queue of that name hears
// it, whichever client enqueued. A ring costs a map lookup and an atomic
// load when nobody listens.
package wakeup

import (
	"sync"
	"sync/atomic"
)

// A Bell is one queue's: rung after an enqueue, heard by its listeners.
type Bell struct {
	mu        sync.Mutex // serialises Listen and its stop
	listeners atomic.Pointer[[]*listener]
}

type listener struct{ f func() }

var bells sync.Map // string → *Bell

// For returns the bell of the queue with hash tag tag.
func For(tag string) *Bell {
	if b, ok := bells.Load(tag); ok {
		return b.(*Bell)
	}
	b, _ := bells.LoadOrStore(tag, &Bell{})
	return b.(*Bell)
}

// Ring calls every listener; they must not block.
func (b *Bell) Ring() {
	if ls := b.listeners.Load(); ls != nil {
		for _, l := range *ls {
			l.f()
		}
	}
}

// Listen adds f, until stop is called.
func (b *Bell) Listen(f func()) (stop func()) {
	l := &listener{f: f}
	b.mu.Lock()
	defer b.mu.Unlock()
	var next []*listener
	if old := b.listeners.Load(); old != nil {
		next = append(next, *old...)
	}
	next = append(next, l)
	b.listeners.Store(&next)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		old := b.listeners.Load()
		if old == nil {
			return
		}
		kept := make([]*listener, 0, len(*old))
		for _, o := range *old {
			if o != l {
				kept = append(kept, o)
			}
		}
		b.listeners.Store(&kept)
	}
}

// A Ringer is a job that works a queue and has its bell: jobs.Drain's.
type Ringer interface {
	Bell() *Bell
}
