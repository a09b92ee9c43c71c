package qstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The operators' face of a queue (package inspect): items listed by state
// and by id, and dead letters and delayed items acted on by id. Every read
// is one read-only script, so that a page is one consistent snapshot. An
// act by id runs the script of the queue's own call (maintain.go), given
// the ids: one path per act, whichever door it comes in by.
var (
	adminListScript = newScript("admin_list")
	adminItemScript = newScript("admin_item")
)

// Client returns the queue's Redis client.
func (q *Store) Client() redis.UniversalClient { return q.rdb }

// State is where an item is.
type State int

// States of an item; StateDone is an acked item whose result is kept.
const (
	StateUnknown State = iota
	StatePending
	StateLeased
	StateDelayed
	StateDead
	StateDone
)

var stateNames = [...]string{"unknown", "pending", "leased", "delayed", "dead", "done"}

// String is the state's name, as the list script takes it.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}

// ItemInfo is an item as an operator sees it.
type ItemInfo struct {
	ID    string
	State State
	// At is when it became pending (pending), its lease's deadline
	// (leased), when it is due (delayed), when it died (dead), when its
	// result expires (done); zero if unknown.
	At          time.Time
	Attempts    int    // claims so far
	Cause       string // why it last failed
	MaxAttempts int    // its own limit; 0: the queue's
	Size        int    // of its payload (done: of its result), in bytes
	Payload     []byte // its first bytes (done: the result's), at most the cap asked for
}

// List returns up to count items of state (pending, leased, delayed or
// dead), oldest first from offset, with at most preview bytes of each
// payload, and how many items the state holds.
func (q *Store) List(ctx context.Context, state State, offset, count, preview int) (items []ItemInfo, total int64, err error) {
	switch {
	case state < StatePending || state > StateDead:
		return nil, 0, fmt.Errorf("%w: list state %v", ErrInvalidArgument, state)
	case offset < 0:
		return nil, 0, fmt.Errorf("%w: offset %d is negative", ErrInvalidArgument, offset)
	case preview < 0:
		return nil, 0, fmt.Errorf("%w: preview %d is negative", ErrInvalidArgument, preview)
	}
	if err := checkCount("list count", count); err != nil {
		return nil, 0, err
	}
	k := q.k
	reply, err := adminListScript.Run(ctx, q.rdb,
		[]string{k.pending, k.leases, k.delayed, k.dead, k.values, k.attempts, k.causes, k.ready, k.limits, k.weights, k.parked},
		state.String(), offset, count, preview, encodingPin).Slice()
	if err != nil {
		return nil, 0, q.wrap("list", err)
	}
	if len(reply) == 0 || (len(reply)-1)%7 != 0 {
		return nil, 0, q.wrap("list", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	total, _ = reply[0].(int64)
	for i := 1; i < len(reply); i += 7 {
		it := itemInfo(reply[i+1:i+7], state)
		it.ID, _ = reply[i].(string)
		items = append(items, it)
	}
	return items, total, nil
}

// Item returns the item id's state, with at most preview bytes of its
// payload (done: of its result); state StateUnknown if the queue holds
// nothing of it.
func (q *Store) Item(ctx context.Context, id string, preview int) (ItemInfo, error) {
	if id == "" || preview < 0 {
		return ItemInfo{}, fmt.Errorf("%w: item %q, preview %d", ErrInvalidArgument, id, preview)
	}
	k := q.k
	reply, err := adminItemScript.Run(ctx, q.rdb,
		[]string{k.values, k.leases, k.delayed, k.dead, k.attempts, k.causes, k.ready, k.limits, k.results},
		id, preview).Slice()
	if err != nil {
		return ItemInfo{}, q.wrap("item", err)
	}
	if len(reply) != 7 {
		return ItemInfo{}, q.wrap("item", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	code, _ := reply[0].(int64)
	it := itemInfo(reply[1:], State(code))
	it.ID = id
	return it, nil
}

// itemInfo reads at, attempts, cause, limit, size, payload.
func itemInfo(r []any, state State) ItemInfo {
	at, _ := r[0].(int64)
	attempts, _ := r[1].(int64)
	cause, _ := r[2].(string)
	limit, _ := r[3].(int64)
	size, _ := r[4].(int64)
	payload, _ := r[5].(string)
	it := ItemInfo{State: state, Attempts: int(attempts), Cause: cause, MaxAttempts: int(limit), Size: int(size), Payload: []byte(payload)}
	if at >= 0 {
		it.At = time.UnixMilli(at)
	}
	return it
}

// RequeueDeadIDs moves the given dead letters back to pending, with a
// fresh count of attempts; an id that is not a dead letter is skipped. It
// returns how many it moved.
func (q *Store) RequeueDeadIDs(ctx context.Context, ids []string) (int, error) {
	return q.runIDs(ctx, "requeue dead", requeueScript, q.k.requeueKeys, ids)
}

// PurgeDeadIDs deletes the given dead letters; an id that is not a dead
// letter is skipped. It returns how many it deleted.
func (q *Store) PurgeDeadIDs(ctx context.Context, ids []string) (int, error) {
	return q.runIDs(ctx, "purge dead", purgeScript, q.k.purgeKeys, ids)
}

// PromoteIDs moves the given delayed items to pending now, as if they
// were due; an id that is not delayed is skipped. It returns how many it
// moved.
func (q *Store) PromoteIDs(ctx context.Context, ids []string) (int, error) {
	return q.runIDs(ctx, "promote", promoteScript, q.k.promoteKeys, ids)
}

func (q *Store) runIDs(ctx context.Context, op string, s *redis.Script, keys []string, ids []string) (int, error) {
	if len(ids) == 0 || len(ids) > BatchMax {
		return 0, fmt.Errorf("%w: %s: %d ids, want 1 to %d", ErrInvalidArgument, op, len(ids), BatchMax)
	}
	// The count first, as the script takes it (byid.lua), then the ids.
	args := make([]any, 1, 1+len(ids))
	args[0] = len(ids)
	for _, id := range ids {
		if id == "" {
			return 0, fmt.Errorf("%w: %s: empty id", ErrInvalidArgument, op)
		}
		args = append(args, id)
	}
	n, err := s.Run(ctx, q.rdb, keys, args...).Int()
	return n, q.wrap(op, err)
}

// UniqueHolders maps the id of each item that holds a unique key to the
// key. It SCANs the queue's unique keys: for tests (tasks/taskstest) on
// a throw-away server, never for a fleet's Redis.
func (q *Store) UniqueHolders(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	prefix := q.k.unique("")
	iter := q.rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		id, err := q.rdb.HGet(ctx, key, "id").Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, q.wrap("unique holders", err)
		}
		out[id] = key[len(prefix):]
	}
	return out, q.wrap("unique holders", iter.Err())
}
