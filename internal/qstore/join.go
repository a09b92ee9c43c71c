package qstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	enqueueJoinScript = newScript("enqueuejoin")
	joinScript        = newScript("join")
	joinResultsScript = newScript("joinresults")
)

// Bounds of a join ([JoinSpec]); package tasks checks JoinChildrenMax
// first.
const (
	JoinChildrenMax = 1000
	joinIDMax       = 64
	// joinBytesMax bounds the payloads of one join, all sent in one call.
	joinBytesMax = 16 << 20
)

// JoinSpec is a join for [Store.EnqueueJoin]: children that run as any
// items do, and a final item that runs once, after every child is acked.
type JoinSpec struct {
	// ID names the join, and is its final item's id: "" makes a new one;
	// otherwise 1 to 64 bytes of [A-Za-z0-9_-]. A join id already used
	// (while its record lives) makes EnqueueJoin add nothing, so a
	// caller that retries with the same id adds the join once.
	ID string
	// Children are the children's payloads, 1 to 1000 of them, none
	// empty. Child n (from 1) gets the id "ID.n".
	Children [][]byte
	// Final is the final item's payload, not empty.
	Final []byte
	// Options apply to the whole join, within [EnqueueOptions]' bounds:
	// Delay holds the children back (the final item waits for them in any
	// case), MaxAttempts is every child's and the final item's own limit,
	// and Unique makes the join unique under its key (see
	// [Store.EnqueueJoin]), Trace is every child's and the final item's
	// trace context. A join is no chain step: a Chain that is not zero is
	// an error.
	Options EnqueueOptions
}

// JoinState is where a join is: running, done or failed.
type JoinState int

// The states of a join.
const (
	// JoinRunning: children, or the final item, are pending, delayed or
	// leased.
	JoinRunning JoinState = iota + 1
	// JoinDone: the final item was acked; Join.Result is its result.
	JoinDone
	// JoinFailed: a child, or the final item, is in the dead letters
	// (Join.Cause says why). [Store.RequeueDead] of it makes the join run
	// on.
	JoinFailed
	// JoinCanceled: the join was canceled ([Store.Cancel]): its final item
	// does not run.
	JoinCanceled
)

func (s JoinState) String() string {
	switch s {
	case JoinRunning:
		return "running"
	case JoinDone:
		return "done"
	case JoinFailed:
		return "failed"
	case JoinCanceled:
		return "canceled"
	}
	return "JoinState(" + strconv.Itoa(int(s)) + ")"
}

// Join is the progress of a join, read by [Store.Join].
type Join struct {
	ID       string // the join's, and its final item's, id
	Children int    // how many children it has
	Done     int    // children acked; Children once the final item is enqueued
	Dead     int    // children in the dead letters
	// DeadChild is the first dead child's id ("" when none is dead).
	DeadChild string
	State     JoinState
	Cause     string // why it failed (JoinFailed)
	Result    []byte // the final item's result (JoinDone)
}

func (j JoinSpec) validate() error {
	switch {
	case len(j.ID) > joinIDMax || strings.ContainsFunc(j.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}):
		return fmt.Errorf("%w: join id %.80q is not 1 to %d bytes of [A-Za-z0-9_-]", ErrInvalidArgument, j.ID, joinIDMax)
	case len(j.Children) == 0 || len(j.Children) > JoinChildrenMax:
		return fmt.Errorf("%w: a join of %d children, not in [1, %d]", ErrInvalidArgument, len(j.Children), JoinChildrenMax)
	case len(j.Final) == 0:
		return fmt.Errorf("%w: join's final payload", ErrEmptyPayload)
	case !j.Options.Chain.isZero():
		return fmt.Errorf("%w: a join is no chain step: its Options.Chain must be zero", ErrInvalidArgument)
	}
	return j.Options.validate()
}

// EnqueueJoin adds a join in one script call, so one round trip, atomic:
// its children, pending at once, and its final item, which the ack of
// the last child enqueues ([Store.Settle]) in the same script call, so
// exactly once: each child's ack counts down the join's record, and an
// ack that changes nothing (resent, or of a claim no longer current)
// counts nothing. It returns the join's id, which is the final item's:
// [Store.Wait] of it returns the final item's result, and [Store.Join]
// reads the join's progress. The final item's value is stored at once, so
// that Wait and [Store.Value] find it before it runs.
//
// A child that dies (dead-lettered by a Nack at its last attempt, or as
// an expired lease by a claim or Tidy) fails the join: the final item does not run, and Wait of the join
// returns an error wrapping [ErrDead] with the child's cause, as a
// Call of a task whose work failed would. [Store.RequeueDead] of that
// child makes the join run on; [Store.PurgeDead] of it gives the join up
// for good (its record, its final value and its final item's limit stay,
// one small key and a field or two, until Redis is told otherwise).
//
// JoinSpec.Options apply as [Store.EnqueueWith] applies them to an item:
// with Delay, the children wait among the delayed items, due Delay after
// the enqueue by Redis's clock, until a claim promotes them; MaxAttempts
// is the attempt limit of every child and of the final item, through
// RequeueDead too. With a Unique key held by a live item, EnqueueJoin
// adds nothing and returns that item's id (a join's: its id) with
// duplicate true; concurrent calls under one key add one join. A join
// holds its key from the enqueue until its final item is acked,
// dead-lettered or purged, or until UniqueFor has passed: a join failed
// by a dead child holds it until UniqueFor, as its final item is still
// live, waiting for the child.
//
// Payloads are checked first, as by [Store.EnqueueBatch], and together
// are at most 16 MiB: invalid input or options fail the call before
// anything is written.
func (q *Store) EnqueueJoin(ctx context.Context, j JoinSpec) (id string, duplicate bool, err error) {
	if err := j.validate(); err != nil {
		return "", false, err
	}
	if err := q.checkPayload("join's final payload", j.Final); err != nil {
		return "", false, err
	}
	size := len(j.Final)
	for i, p := range j.Children {
		if len(p) == 0 {
			return "", false, fmt.Errorf("%w: join's child %d", ErrEmptyPayload, i+1)
		}
		if err := q.checkPayload(fmt.Sprintf("join's child %d", i+1), p); err != nil {
			return "", false, err
		}
		size += len(p)
	}
	if size > joinBytesMax {
		return "", false, fmt.Errorf("%w: a join of %d bytes is above %d", ErrPayloadTooLarge, size, joinBytesMax)
	}
	id = j.ID
	if id == "" {
		id = newID()
	}
	o := j.Options
	args := make([]any, 0, 7+len(j.Children))
	args = append(args, encodingPin, id, j.Final, ceilMillis(o.Delay), o.MaxAttempts, ceilMillis(o.UniqueFor))
	keys := []string{q.k.pending, q.k.values, q.k.ready, q.k.join(id), q.k.delayed, q.k.limits, q.k.dead}
	if o.Unique != "" {
		keys = append(keys, q.k.unique(o.Unique))
	}
	if o.Trace != "" {
		keys = append(keys, q.k.traced)
		args = append(args, o.Trace)
	}
	for _, p := range j.Children {
		args = append(args, p)
	}
	reply, err := enqueueJoinScript.Run(ctx, q.rdb, keys, args...).Slice()
	if err != nil {
		return "", false, q.wrap("enqueue join", err)
	}
	if len(reply) != 2 {
		return "", false, q.wrap("enqueue join", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	got, _ := reply[0].(string)
	dup, _ := reply[1].(int64)
	if got == "" {
		return "", false, q.wrap("enqueue join", fmt.Errorf("%w: no id", errUnexpectedScript))
	}
	if dup == 0 {
		q.bell.Ring() // the children are pending, whatever the final's delay
	}
	return got, dup == 1, nil
}

// Join reads the progress of join id in one script call: how many of its
// children are acked and dead, and its final item's state once they are
// all acked. A join's record lives until its last child is acked, then
// for Config.ResultRetention. It returns ErrNotFound for an unknown join,
// and one whose final item is gone (purged, or its result past the
// retention).
func (q *Store) Join(ctx context.Context, id string) (Join, error) {
	if err := checkJoinID(id); err != nil {
		return Join{}, err
	}
	keys := []string{q.k.join(id), q.k.results, q.k.values, q.k.dead, q.k.causes, q.k.canceled}
	reply, err := joinScript.Run(ctx, q.rdb, keys, id).Slice()
	if err != nil {
		return Join{}, q.wrap("join", err)
	}
	if len(reply) != 6 {
		return Join{}, q.wrap("join", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	state, _ := reply[0].(int64)
	total, _ := reply[1].(int64)
	left, _ := reply[2].(int64)
	dead, _ := reply[3].(int64)
	first, _ := reply[4].(string)
	detail, _ := reply[5].(string)
	j := Join{ID: id, Children: int(total), Done: int(total - left), Dead: int(dead), DeadChild: first}
	switch state {
	case 1:
		j.State, j.Result = JoinDone, []byte(detail)
	case 2:
		j.State, j.Cause = JoinFailed, detail
		if first != "" {
			j.Cause = "child " + first + ": " + detail
		}
	case 3:
		j.State = JoinRunning
	case 4:
		j.State = JoinCanceled
	case 0:
		if total == 0 {
			return Join{}, q.wrap("join", fmt.Errorf("%w: no join %s", ErrNotFound, id))
		}
		return j, q.wrap("join", fmt.Errorf("%w: join %s: its final item is gone", ErrNotFound, id))
	default:
		return j, q.wrap("join", fmt.Errorf("%w: %v", errUnexpectedScript, reply))
	}
	return j, nil
}

// JoinResults reads the results of join id's children in one script
// call, in the children's order: nil for a child not acked yet, or whose
// result is past Config.ResultRetention. The final item's worker calls
// it to gather what its children returned. It returns ErrNotFound for an
// unknown join.
func (q *Store) JoinResults(ctx context.Context, id string) ([][]byte, error) {
	if err := checkJoinID(id); err != nil {
		return nil, err
	}
	reply, err := joinResultsScript.Run(ctx, q.rdb, []string{q.k.join(id), q.k.results}, id).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: no join %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, q.wrap("join results", err)
	}
	out := make([][]byte, len(reply))
	for i, r := range reply {
		if s, ok := r.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

func checkJoinID(id string) error {
	if id == "" || len(id) > joinIDMax || strings.Contains(id, ".") {
		return fmt.Errorf("%w: join id %.80q, not 1 to %d bytes without '.'", ErrInvalidArgument, id, joinIDMax)
	}
	return nil
}

// joinOf is the join of a child's id "ID.n"; "" for an item that is no
// child (ids made by newID have no '.').
func joinOf(id string) string {
	join, _, ok := strings.Cut(id, ".")
	if !ok || join == "" {
		return ""
	}
	return join
}
