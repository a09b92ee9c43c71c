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
	Trace       string    // the enqueue's trace context, if it had one (tracectx.go)
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
	// Items with a limit of their own: (index from 1, limit) pairs. The
	// items are leased by now, so a pair out of place is skipped rather
	// than failing the claim.
	for i := 0; i < len(own); i += 2 {
		at, _ := own[i].(int64)
		limit, _ := own[i+1].(int64)
		if at >= 1 && int(at) <= len(items) && limit >= 1 {
			items[at-1].MaxAttempts = int(limit)
		}
	}
	// Items claimed from a priority's lane: (index from 1, priority)
	// pairs, skipped when out of place, as the limits are.
	for i := 0; i < len(lanes); i += 2 {
		at, _ := lanes[i].(int64)
		p, _ := lanes[i+1].(string)
		if at >= 1 && int(at) <= len(items) && p != "" {
			items[at-1].Priority = p
		}
	}
	// (index from 1, trace context) pairs, likewise.
	for i := 0; i < len(traced); i += 2 {
		at, _ := traced[i].(int64)
		trace, _ := traced[i+1].(string)
		if at >= 1 && int(at) <= len(items) {
			items[at-1].Trace = trace
		}
	}
	c.Items = items
	return c, nil
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
