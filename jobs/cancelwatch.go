package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
)

// cancelPoll is how often a batch with handlers running reads which of
// their items were canceled ([queue.Queue.Cancel]): one read per batch per
// cancelPoll, whatever the number of handlers, and none for a batch whose
// handlers all end sooner. A canceled handler's context ends within
// cancelPoll and a round trip of the cancel.
const cancelPoll = 100 * time.Millisecond

// cancelWatch ends the contexts of a batch's running handlers whose
// items are canceled, with [queue.ErrCanceled] as their cause. It polls
// rather than subscribes: a subscription would hold a connection per
// process (and per master on a cluster) for an event that is rare, where
// a poll costs a read only while handlers run longer than cancelPoll. A
// timer rather than a goroutine waits for the first poll, so that a batch
// that ends sooner costs one timer.
type cancelWatch struct {
	q       *qstore.Store
	ctx     context.Context // of the reads: the slice's, without its cancel
	timeout time.Duration   // of each read
	items   []qstore.Item   // the batch
	timer   *time.Timer

	mu      sync.Mutex
	running []context.CancelCauseFunc // by index in items; nil when not running
	closed  bool

	polling sync.Mutex // held by a poll, so that close waits for it
}

// watchCancels starts the watch of one batch; close ends it. A slice by
// index rather than a map by id: no allocation per item for the
// bookkeeping, only for the item's context.
func (j *drainJob) watchCancels(ctx context.Context, items []qstore.Item) *cancelWatch {
	w := &cancelWatch{
		q: j.q, ctx: context.WithoutCancel(ctx), timeout: j.cfg.RedisTimeout,
		items: items, running: make([]context.CancelCauseFunc, len(items)),
	}
	w.timer = time.AfterFunc(cancelPoll, w.tick)
	return w
}

// track returns ctx, which the watch ends if items[i] is canceled; untrack
// stops that and releases ctx.
func (w *cancelWatch) track(ctx context.Context, i int) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	w.running[i] = cancel
	w.mu.Unlock()
	return ctx
}

func (w *cancelWatch) untrack(i int) {
	w.mu.Lock()
	cancel := w.running[i]
	w.running[i] = nil
	w.mu.Unlock()
	cancel(nil)
}

// tick polls, then sets the timer for the next poll unless the batch is
// over.
func (w *cancelWatch) tick() {
	w.polling.Lock()
	defer w.polling.Unlock()
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return
	}
	w.poll()
	w.mu.Lock()
	if !w.closed {
		w.timer.Reset(cancelPoll)
	}
	w.mu.Unlock()
}

// poll reads which tracked items are canceled and ends their handlers'
// contexts. A failed read is skipped: the next tick reads again, and the
// item's settle changes nothing anyway.
func (w *cancelWatch) poll() {
	var ids []string
	var at []int
	w.mu.Lock()
	for i, cancel := range w.running {
		if cancel != nil {
			ids = append(ids, w.items[i].ID)
			at = append(at, i)
		}
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	defer cancel()
	for start := 0; start < len(ids); start += qstore.BatchMax {
		end := min(start+qstore.BatchMax, len(ids))
		canceled, err := w.q.CanceledOf(rctx, ids[start:end])
		if err != nil {
			return
		}
		w.mu.Lock()
		for k, c := range canceled {
			if stop := w.running[at[start+k]]; c && stop != nil {
				stop(qstore.ErrCanceled)
			}
		}
		w.mu.Unlock()
	}
}

// close ends the watch and waits for a poll under way, if any.
func (w *cancelWatch) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.timer.Stop()
	w.polling.Lock()
	//lint:ignore SA2001 an empty critical section: it waits for a tick under way
	w.polling.Unlock()
}
