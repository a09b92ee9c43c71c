package drain

import (
	"context"
	"sync"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
)

// cancelPoll is how often a batch with handlers running reads which of
// its items were canceled ([queue.Queue.Cancel]), those running and
// those claimed but not started: one read per batch per cancelPoll,
// whatever the number of handlers, and none for a batch whose handlers
// all end sooner. A canceled handler's context ends within cancelPoll
// and a round trip of the cancel.
const cancelPoll = 100 * time.Millisecond

// cancelWatch ends the contexts of a batch's running handlers whose
// items are canceled, with [queue.ErrCanceled] as their cause, and keeps
// canceled items from starting. It polls rather than subscribes: a
// subscription would hold a connection per process (and per master on a
// cluster) for an event that is rare, where a poll costs a read only
// while handlers run longer than cancelPoll. A timer rather than a
// goroutine waits for the first poll, so that a batch that ends sooner
// costs one timer.
//
// An item starts only within qstore.StartFence of the sending of a read
// that found it not canceled: the batch's claim, or a poll; past it, the
// start reads first. A Cancel that ends a lease returns only after
// StartFence, so a start it does not stop was decided before it returned.
// The polls, every cancelPoll, keep the reads fresh while handlers run,
// those of a batch claimed ahead too (see follow): a start reads only
// when a poll was slow.
type cancelWatch struct {
	q       *qstore.Store
	ctx     context.Context // of the reads: the slice's, without its cancel
	timeout time.Duration   // of each read
	items   []qstore.Item   // the batch
	timer   *time.Timer

	mu       sync.Mutex
	running  []context.CancelCauseFunc // by index in items; nil when not running
	canceled []bool                    // by index: a read found the item canceled
	next     int                       // items[next:] are not started yet
	halted   bool                      // no more items start
	fresh    time.Time                 // items may start until then (see StartFence)
	closed   bool
	then     *cancelWatch // the batch claimed ahead, whose items this one's polls read too

	polling sync.Mutex // held by a poll, so that close waits for it
}

// watchCancels makes the watch of one batch, claimed by a call sent at
// claimed; begin starts its polls, once the batch is handled, and close
// ends it. Slices by index rather than maps by id: no allocation per
// item for the bookkeeping, only for the item's context.
func (j *drainJob) watchCancels(ctx context.Context, items []qstore.Item, claimed time.Time) *cancelWatch {
	return &cancelWatch{
		q: j.q, ctx: context.WithoutCancel(ctx), timeout: j.cfg.RedisTimeout,
		items: items, running: make([]context.CancelCauseFunc, len(items)),
		canceled: make([]bool, len(items)), fresh: claimed.Add(qstore.StartFence),
	}
}

// begin starts the polls: the first one cancelPoll from now.
func (w *cancelWatch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(cancelPoll, w.tick)
}

// follow has w's polls read the items of then, the batch claimed while
// w's runs, until w closes: then's start, after w's batch, finds its
// reads fresh rather than reading, however long w's batch took.
func (w *cancelWatch) follow(then *cancelWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.then = then
	}
}

// startVerdict is what start decided of an item.
type startVerdict int

const (
	startRun      startVerdict = iota // run it
	startCanceled                     // do not: it is canceled
	startUnread                       // do not: whether it is canceled is unknown (a read failed)
)

// start decides whether items[i], the next of the batch, starts, reading
// which items are canceled first if the latest read is older than
// StartFence. On startRun it returns ctx for the handler, which the
// watch ends if the item is canceled; untrack stops that and releases
// ctx. On startUnread the item is still next.
func (w *cancelWatch) start(ctx context.Context, i int) (context.Context, startVerdict) {
	if ictx, v, decided := w.decide(ctx, i); decided {
		return ictx, v
	}
	w.polling.Lock()
	if w.stale() { // unless a poll under way read meanwhile
		w.poll()
	}
	w.polling.Unlock()
	if ictx, v, decided := w.decide(ctx, i); decided {
		return ictx, v
	}
	return nil, startUnread
}

// decide decides of items[i] unless the latest read is too old.
func (w *cancelWatch) decide(ctx context.Context, i int) (context.Context, startVerdict, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.canceled[i]:
		w.next = i + 1
		return nil, startCanceled, true
	case time.Now().Before(w.fresh):
		ictx, cancel := context.WithCancelCause(ctx)
		w.running[i] = cancel
		w.next = i + 1
		return ictx, startRun, true
	}
	return nil, 0, false
}

func (w *cancelWatch) stale() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !time.Now().Before(w.fresh)
}

func (w *cancelWatch) untrack(i int) {
	w.mu.Lock()
	cancel := w.running[i]
	w.running[i] = nil
	w.mu.Unlock()
	cancel(nil)
}

// halt says that no more items start: polls read only the running ones.
func (w *cancelWatch) halt() {
	w.mu.Lock()
	w.halted = true
	w.mu.Unlock()
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

// poll reads which of the running items and those yet to start are
// canceled, ends the running ones' contexts, marks the others not to
// start, and counts the fence from when it sent the read. A failed read
// is skipped: the next tick reads again, a start reads itself once the
// fence passed, and a canceled item's settle changes nothing anyway.
// Called with polling held.
func (w *cancelWatch) poll() {
	w.mu.Lock()
	ids, at := w.unsettled(nil, nil)
	own, then := len(ids), w.then
	w.mu.Unlock()
	if then != nil { // not begun yet: it begins once w is closed
		then.mu.Lock()
		ids, at = then.unsettled(ids, at)
		then.mu.Unlock()
	}
	if len(ids) == 0 {
		return
	}
	sent := time.Now()
	rctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	defer cancel()
	for start := 0; start < len(ids); start += qstore.BatchMax {
		end := min(start+qstore.BatchMax, len(ids))
		canceled, err := w.q.CanceledOf(rctx, ids[start:end])
		if err != nil {
			return
		}
		for k, c := range canceled {
			if c && start+k < own {
				w.found(at[start+k])
			} else if c {
				then.found(at[start+k])
			}
		}
	}
	// Every item yet to start was read, the first of them no sooner than
	// sent: those found canceled never start; the others may until the
	// fence.
	w.readAt(sent)
	if then != nil {
		then.readAt(sent)
	}
}

// unsettled appends to ids the items that a poll reads, running or yet
// to start, and their indexes to at. Called with mu held.
func (w *cancelWatch) unsettled(ids []string, at []int) ([]string, []int) {
	for i, cancel := range w.running {
		if cancel != nil || i >= w.next && !w.halted && !w.canceled[i] {
			ids = append(ids, w.items[i].ID)
			at = append(at, i)
		}
	}
	return ids, at
}

// found marks items[i] canceled, and ends its handler's context.
func (w *cancelWatch) found(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.canceled[i] = true
	if stop := w.running[i]; stop != nil {
		stop(qstore.ErrCanceled)
	}
}

// readAt counts the fence from sent, when a read of every item yet to
// start was sent.
func (w *cancelWatch) readAt(sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if until := sent.Add(qstore.StartFence); until.After(w.fresh) {
		w.fresh = until
	}
}

// close ends the watch and waits for a poll under way, if any.
func (w *cancelWatch) close() {
	w.mu.Lock()
	w.closed = true
	w.then = nil
	timer := w.timer
	w.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	w.polling.Lock()
	//lint:ignore SA2001 an empty critical section: it waits for a tick under way
	w.polling.Unlock()
}
