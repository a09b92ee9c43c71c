package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/internal/taskenv"
)

// State is where an item of a queue is.
type State int

// The states of an item. An item is in exactly one of pending, leased,
// delayed or dead until it is acked; then it is done while its result is
// kept (the queue's ResultRetention), and unknown after.
const (
	StateUnknown State = iota
	StatePending
	StateLeased
	StateDelayed
	StateDead
	StateDone
)

// String returns the state's name: "pending", "leased", ….
func (s State) String() string { return qstore.State(s).String() }

// ParseState reads a state's name, as [State.String] writes it.
func ParseState(name string) (State, error) {
	for s := StatePending; s <= StateDone; s++ {
		if s.String() == name {
			return s, nil
		}
	}
	return StateUnknown, fmt.Errorf("%w: state %q (want pending, leased, delayed, dead or done)", ErrInvalidArgument, name)
}

// Item is an item of a queue, as an operator sees it.
type Item struct {
	ID    string
	Queue string
	State State
	// At is when it became pending (pending), its lease's deadline
	// (leased), when it is due (delayed), when it died (dead) or when its
	// result expires (done), by Redis's clock; zero if unknown.
	At          time.Time
	Attempts    int    // claims so far
	MaxAttempts int    // its own attempt limit; 0: the queue's
	Cause       string // why it last failed
	// Size is its payload's size in bytes (done: its result's), and
	// Payload its first Config.Preview bytes.
	Size    int
	Payload []byte
	// Task is the payload read as a tasks task; nil if it is not one, or
	// if the preview cut it (raise Config.Preview).
	Task *Task
}

// Task is a task's envelope: its type, its codec and its arguments,
// encoded with that codec.
type Task struct {
	Type  string
	Codec string
	Args  []byte
	// ChainStep and ChainSteps place a chain's step (1 of 3); zero for a
	// task on its own. Chain is the chain's id, for [Inspector.Chain].
	ChainStep, ChainSteps int
	Chain                 string
}

// Page is a page of one state's items, oldest first.
type Page struct {
	Items  []Item
	Offset int   // of the first item
	Total  int64 // the items in that state now
}

// Items returns up to count items (1 to 1000) of queue in state
// (pending, leased, delayed or dead), the oldest first, from offset.
// Pages are read one script call each: items that move between two
// calls may be skipped or seen twice. A queue that the registry does not
// list (no recruiter has written it) and that holds nothing fails with
// [ErrUnknownQueue], as every act on a queue does: a typo, not a page.
func (in *Inspector) Items(ctx context.Context, queue string, state State, offset, count int) (Page, error) {
	if state < StatePending || state > StateDead {
		return Page{}, fmt.Errorf("%w: list state %v (want pending, leased, delayed or dead)", ErrInvalidArgument, state)
	}
	st, err := in.queue(ctx, queue)
	if err != nil {
		return Page{}, err
	}
	infos, total, err := st.List(ctx, qstore.State(state), offset, count, in.cfg.Preview)
	if err != nil {
		return Page{}, in.wrap(err)
	}
	p := Page{Offset: offset, Total: total, Items: make([]Item, 0, len(infos))}
	for _, it := range infos {
		p.Items = append(p.Items, in.item(queue, it))
	}
	return p, nil
}

// Item returns the item id of queue, in whatever state it is;
// ErrNotFound if the queue holds nothing of it.
func (in *Inspector) Item(ctx context.Context, queue, id string) (Item, error) {
	st, err := in.queue(ctx, queue)
	if err != nil {
		return Item{}, err
	}
	it, err := st.Item(ctx, id, in.cfg.Preview)
	if err != nil {
		return Item{}, in.wrap(err)
	}
	if it.State == qstore.StateUnknown {
		return Item{}, fmt.Errorf("%w: item %s in queue %s", ErrNotFound, id, queue)
	}
	return in.item(queue, it), nil
}

// FindItem looks for the item id in every registered queue, in name
// order, and returns the first found; ErrNotFound if none holds it.
func (in *Inspector) FindItem(ctx context.Context, id string) (Item, error) {
	if id == "" {
		return Item{}, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return Item{}, fmt.Errorf("inspect: find item: %w", err)
	}
	for _, q := range snap.Queues {
		it, err := in.store(q.Name).Item(ctx, id, in.cfg.Preview)
		if err != nil {
			return Item{}, in.wrap(err)
		}
		if it.State != qstore.StateUnknown {
			return in.item(q.Name, it), nil
		}
	}
	return Item{}, fmt.Errorf("%w: item %s in the %d registered queues", ErrNotFound, id, len(snap.Queues))
}

func (in *Inspector) item(queue string, it qstore.ItemInfo) Item {
	out := Item{ID: it.ID, Queue: queue, State: State(it.State), At: it.At, Attempts: it.Attempts,
		MaxAttempts: it.MaxAttempts, Cause: it.Cause, Size: it.Size, Payload: it.Payload}
	if it.State != qstore.StateDone && len(it.Payload) == it.Size {
		if t, err := taskenv.Decode(it.Payload); err == nil {
			out.Task = &Task{Type: t.Type, Codec: t.Codec, Args: t.Args}
			if t.Chain != nil {
				out.Task.ChainStep, out.Task.ChainSteps, out.Task.Chain = t.Chain.Step, t.Chain.Steps, t.Chain.ID
				if t.Chain.ID == "" { // step 1: the chain is named after it
					out.Task.Chain = it.ID
				}
			}
		}
	}
	return out
}

// RetryDead moves the given dead letters of queue (1 to 1000 ids) back to
// pending, each with a fresh count of attempts (an item keeps its own
// attempt limit) and in its priority's lane, in one script call; an id
// that is not a dead letter is skipped. It returns how many it moved.
func (in *Inspector) RetryDead(ctx context.Context, queue string, ids ...string) (int, error) {
	st, err := in.queue(ctx, queue)
	if err != nil {
		return 0, err
	}
	n, err := st.RequeueDeadIDs(ctx, ids)
	return n, in.wrap(err)
}

// PurgeDead deletes the given dead letters of queue (1 to 1000 ids) and
// all that is kept of them, in one script call; an id that is not a dead
// letter is skipped. It returns how many it deleted.
func (in *Inspector) PurgeDead(ctx context.Context, queue string, ids ...string) (int, error) {
	st, err := in.queue(ctx, queue)
	if err != nil {
		return 0, err
	}
	n, err := st.PurgeDeadIDs(ctx, ids)
	return n, in.wrap(err)
}

// RunDelayed makes the given delayed items of queue (1 to 1000 ids)
// pending now, each in its priority's lane, as if they were due, in one
// script call: the next claims take them, by their priorities' weights.
// An id that is not delayed is skipped. It returns how many it moved.
// (Items that are due move with the queue's next claim, or with
// [github.com/worksteal/worksteal/jobs.PromoteDue] for a queue no one
// claims from.)
func (in *Inspector) RunDelayed(ctx context.Context, queue string, ids ...string) (int, error) {
	st, err := in.queue(ctx, queue)
	if err != nil {
		return 0, err
	}
	n, err := st.PromoteIDs(ctx, ids)
	return n, in.wrap(err)
}

// RetryAllDead moves the dead letters of queue back to pending, the
// oldest first, as [Inspector.RetryDead] moves given ones, in script calls
// of up to 1000: at most max of them, or with max 0 as many as there were
// when it began, so that items that die again meanwhile are not retried
// in a loop. It returns how many it moved.
func (in *Inspector) RetryAllDead(ctx context.Context, queue string, max int) (int, error) {
	return in.allDead(ctx, "retry all dead", queue, max, (*qstore.Store).RequeueDead)
}

// PurgeAllDead deletes the dead letters of queue, the oldest first, as
// [Inspector.PurgeDead] deletes given ones: at most max of them, or with
// max 0 as many as there were when it began, in script calls of up to
// 1000. It returns how many it deleted.
func (in *Inspector) PurgeAllDead(ctx context.Context, queue string, max int) (int, error) {
	return in.allDead(ctx, "purge all dead", queue, max, (*qstore.Store).PurgeDead)
}

func (in *Inspector) allDead(ctx context.Context, op, queue string, max int, step func(*qstore.Store, context.Context, int) (int, error)) (int, error) {
	if max < 0 {
		return 0, fmt.Errorf("%w: %s: max %d is negative", ErrInvalidArgument, op, max)
	}
	st, err := in.queue(ctx, queue)
	if err != nil {
		return 0, err
	}
	d, err := st.Depth(ctx)
	if err != nil {
		return 0, in.wrap(err)
	}
	want := int(d.Dead)
	if max > 0 {
		want = min(want, max)
	}
	done := 0
	for done < want {
		n, err := step(st, ctx, min(qstore.BatchMax, want-done))
		done += n
		if err != nil {
			return done, in.wrap(err)
		}
		if n == 0 {
			break
		}
	}
	return done, nil
}

// queue returns the store of the queue called name if the registry lists
// it, or if it holds anything (a queue of a fleet whose recruiters have
// not written the registry yet); else ErrUnknownQueue.
func (in *Inspector) queue(ctx context.Context, name string) (*qstore.Store, error) {
	if err := names.Check(name); err != nil {
		return nil, fmt.Errorf("%w: queue: %v", ErrInvalidArgument, err)
	}
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("inspect: queue %s: %w", name, err)
	}
	st := in.store(name)
	for _, q := range snap.Queues {
		if q.Name == name {
			return st, nil
		}
	}
	d, err := st.Depth(ctx)
	if err != nil {
		return nil, in.wrap(err)
	}
	if d.Pending+d.Leased+d.Delayed+d.Dead == 0 {
		return nil, fmt.Errorf("%w %q under prefix %q: not in the registry, and empty", ErrUnknownQueue, name, in.cfg.Prefix)
	}
	return st, nil
}

// wrap maps the storage's errors to this package's.
func (in *Inspector) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, qstore.ErrInvalidArgument):
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return fmt.Errorf("inspect: %w", err)
}

// Canceled says what [Inspector.Cancel] did.
type Canceled struct {
	Queue string
	// Items counts the items canceled: 0 if they were before, up to a
	// fan-out's children and its final step.
	Items int
	// Running counts those of them that were running: their handlers'
	// contexts end at their drain's next poll (package jobs).
	Running int
}

// Cancel cancels the item (task) id of queue, or, with queue "", of the
// first registered queue that holds it, as [queue.Queue.Cancel] does: a
// chain's id cancels its current step, a fan-out's its children and its
// final step. The canceled record is kept for the queue's
// ResultRetention as the registry has it (24h if it has none). It
// returns an error wrapping [ErrNotFound] if no queue holds id, and one
// wrapping [queue.ErrFinished] if it was acked or is dead.
func (in *Inspector) Cancel(ctx context.Context, queue, id string) (Canceled, error) {
	if id == "" {
		return Canceled{}, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return Canceled{}, fmt.Errorf("inspect: cancel: %w", err)
	}
	retention := map[string]time.Duration{}
	var queues []string
	for _, q := range snap.Queues {
		retention[q.Name] = ms(q.RetentionMS)
		queues = append(queues, q.Name)
	}
	if queue != "" {
		if _, err := in.queue(ctx, queue); err != nil {
			return Canceled{}, err
		}
		queues = []string{queue}
	}
	for _, name := range queues {
		st := qstore.New(in.rdb, name, qstore.Config{Prefix: in.cfg.Prefix, MaxPayload: previewMax,
			ResultRetention: cmp.Or(max(retention[name], 0), retentionDefault)})
		r, err := st.Cancel(ctx, id)
		if errors.Is(err, qstore.ErrNotFound) {
			continue
		}
		return Canceled{Queue: name, Items: r.Canceled, Running: r.Running}, in.wrap(err)
	}
	return Canceled{}, fmt.Errorf("%w: item %s in %d queues", ErrNotFound, id, len(queues))
}

// retentionDefault is queue.Config's ResultRetention default, for a
// queue that the registry does not list.
const retentionDefault = 24 * time.Hour
