package qstore

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

var (
	// Claim maintains the queue first: Tidy's and Promote's steps. A
	// queue with limits or priorities claims in claimtyped.lua.
	claimScript   = newScript("claim")
	extendScript  = newScript("extend")
	releaseScript = newScript("release")
)

// Item is queue.Item: the same fields, in the same order, so that one
// converts to the other.
type Item struct {
	ID          string
	Payload     []byte
	Attempt     int       // claims so far, 1 on the first
	MaxAttempts int       // the item's own limit, or else the queue's
	Deadline    time.Time // when the lease ends, by Redis's clock
	Token       string    // "attempt-number", never empty
	Priority    string    // the lane it was claimed from: DefaultPriority unless it was enqueued with another
	Trace       string    // the enqueue's trace context, if it had one, then a join's final item's children's runs' (tracectx.go: SplitTrace)
}

func checkCount(what string, n int) error {
	if n < 1 || n > BatchMax {
		return fmt.Errorf("%w: %s %d is not in [1, %d]", ErrInvalidArgument, what, n, BatchMax)
	}
	return nil
}

func checkItem(it Item) error {
	if it.ID == "" || it.Token == "" {
		return fmt.Errorf("%w: item %q has no id or token: it was not claimed", ErrInvalidArgument, it.ID)
	}
	return nil
}

// Claim is queue.Queue.Claim.
func (q *Store) Claim(ctx context.Context, n int) ([]Item, error) {
	c, err := q.ClaimDetailed(ctx, n)
	return c.Items, err
}

// Claimed is queue.Claimed, its Items of this package.
type Claimed struct {
	Items               []Item // empty, not nil, when none was pending
	Promoted, Recovered int
	// More: Promoted or Recovered reached n, or the claim set items of
	// limited task types aside up to its bound, or dropped canceled
	// items' tombstones, with fewer than n leased.
	More bool
}

// ClaimDetailed is queue.Queue.ClaimDetailed: one script call, which
// promotes and tidies up to n of each before it claims.
func (q *Store) ClaimDetailed(ctx context.Context, n int) (Claimed, error) {
	if err := checkCount("Claim n", n); err != nil {
		return Claimed{}, err
	}
	reply, err := claimScript.Run(ctx, q.rdb, q.k.claimKeys, n, q.cfg.Lease.Milliseconds(), encodingPin, q.cfg.MaxAttempts).Slice()
	if err != nil {
		return Claimed{}, q.wrap("claim", err)
	}
	reply = q.splitDead(ctx, reply)
	if len(reply) < 3 {
		return Claimed{}, q.wrap("claim", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	promoted, _ := reply[1].(int64)
	recovered, _ := reply[2].(int64)
	c := Claimed{Items: []Item{}, Promoted: int(promoted), Recovered: int(recovered)}
	c.More = c.Promoted >= n || c.Recovered >= n
	if len(reply) == 3 {
		return c, nil // nothing pending
	}
	own, _ := reply[4].([]any)
	// After the items, this release's script puts the lanes, then the
	// trace contexts when any item has one; the previous one's script,
	// which a test runs beside this one, ends with the items.
	end := len(reply)
	var lanes, traced []any
	if (end-6)%3 == 2 {
		traced, _ = reply[end-1].([]any)
		end--
	}
	if (end-6)%3 == 1 {
		lanes, _ = reply[end-1].([]any)
		end--
	}
	if (end-6)%3 != 0 || len(own)%2 != 0 || len(lanes)%2 != 0 || len(traced)%2 != 0 {
		return Claimed{}, q.wrap("claim", fmt.Errorf("%w: %d values, %d limits, %d lanes, %d traces", errUnexpectedScript, len(reply), len(own), len(lanes), len(traced)))
	}
	ms, _ := reply[0].(int64)
	deadline := time.UnixMilli(ms)
	// A token is the attempt and the claim's "-number": the script sends
	// the number once rather than a token per item.
	suffix, _ := reply[3].(string)
	if more, _ := reply[5].(int64); more == 1 {
		c.More = true
	}
	items := make([]Item, 0, (end-6)/3)
	for i := 6; i < end; i += 3 {
		id, _ := reply[i].(string)
		payload, _ := reply[i+1].(string)
		attempt, _ := reply[i+2].(int64)
		items = append(items, Item{
			ID: id, Payload: []byte(payload), Attempt: int(attempt), MaxAttempts: q.cfg.MaxAttempts,
			Deadline: deadline, Token: strconv.FormatInt(attempt, 10) + suffix, Priority: DefaultPriority,
		})
	}
	// Then (index from 1, value) pairs: the items with a limit of their
	// own, those claimed from a priority's lane, those with a trace
	// context. The items are leased by now, so a pair out of place is
	// skipped rather than failing the claim.
	eachPair(own, items, func(it *Item, v any) {
		if limit, _ := v.(int64); limit >= 1 {
			it.MaxAttempts = int(limit)
		}
	})
	eachPair(lanes, items, func(it *Item, v any) {
		if p, _ := v.(string); p != "" {
			it.Priority = p
		}
	})
	eachPair(traced, items, func(it *Item, v any) { it.Trace, _ = v.(string) })
	c.Items = items
	return c, nil
}

// eachPair calls set with the item and the value of each (index from 1,
// value) pair of pairs whose index is one of items'.
func eachPair(pairs []any, items []Item, set func(it *Item, v any)) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if at, _ := pairs[i].(int64); at >= 1 && int(at) <= len(items) {
			set(&items[at-1], pairs[i+1])
		}
	}
}

// Extend is queue.Queue.Extend.
func (q *Store) Extend(ctx context.Context, it Item, d time.Duration) (time.Time, error) {
	if err := checkItem(it); err != nil {
		return time.Time{}, err
	}
	if d < time.Millisecond {
		return time.Time{}, fmt.Errorf("%w: Extend by %v, below 1ms", ErrInvalidArgument, d)
	}
	ms, err := extendScript.Run(ctx, q.rdb, q.k.extendKeys, it.ID, it.Token, d.Milliseconds()).Int64()
	if err != nil {
		return time.Time{}, q.wrap("extend", err)
	}
	if ms < 0 {
		return time.Time{}, q.wrap("extend", fmt.Errorf("%w: %s (token %s)", ErrLeaseLost, it.ID, it.Token))
	}
	return time.UnixMilli(ms), nil
}

// Release is queue.Queue.Release, in script calls of at most BatchMax
// items.
func (q *Store) Release(ctx context.Context, items ...Item) (int, error) {
	released := 0
	for start := 0; start < len(items); start += BatchMax {
		chunk := items[start:min(start+BatchMax, len(items))]
		args := make([]any, 0, 2*len(chunk))
		for _, it := range chunk {
			if err := checkItem(it); err != nil {
				return released, err
			}
			args = append(args, it.ID, it.Token)
		}
		n, err := releaseScript.Run(ctx, q.rdb, q.k.releaseKeys, args...).Int()
		released += n
		if err != nil {
			return released, q.wrap("release", err)
		}
	}
	return released, nil
}
