package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// Claim maintains the queue first: Tidy's and Promote's steps.
	//go:embed claim.lua
	claimSource string
	claimScript = redis.NewScript(expiredSource + maintainSource + claimSource)

	//go:embed extend.lua
	extendSource string
	extendScript = redis.NewScript(extendSource)

	//go:embed release.lua
	releaseSource string
	releaseScript = redis.NewScript(releaseSource)
)

// Item is a claimed item. Its Token names this one claim: Ack, Nack,
// Extend and Release act only while the token is still the item's current
// one, so a worker whose lease expired and was re-claimed changes nothing.
type Item struct {
	ID      string
	Payload []byte
	// Attempt counts the claims of this item so far, 1 on the first;
	// claims handed back with Release do not count.
	Attempt int
	// MaxAttempts is the item's limit: its own ([EnqueueOptions.MaxAttempts])
	// or else the queue's Config.MaxAttempts. A nack at Attempt >=
	// MaxAttempts dead-letters the item.
	MaxAttempts int
	// Deadline is when the lease ends, by Redis's clock.
	Deadline time.Time
	// Token identifies the claim: no two claims of one item share a token.
	// It is opaque ("attempt-number" today), never empty.
	Token string
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

// Claim leases up to n (at most [BatchMax]) items from the head of the
// queue, in one atomic step: each moves from pending into the leases with
// the deadline Redis time + Config.Lease, the time rounded up to the ms so
// that the lease never ends before the caller's clock, counting from when
// it called Claim, says it does. It returns fewer items, or none, when
// fewer are pending.
//
// Claim maintains the queue first, in the same step, so that whoever
// claims a queue keeps it moving: it moves up to n delayed items that are
// due (retries, delayed enqueues) to the tail of the queue, as
// [Queue.Promote] does, and hands back up to n expired leases (crashed or
// stuck workers), to the tail of the queue or, at their last attempt, to
// the dead letters, as [Queue.Tidy] does; what they bring back can be
// claimed by this same call. [Queue.ClaimDetailed] says how much they
// brought back and whether more may be waiting.
//
// Malformed entries met on the way do not fail the claim: an id without a
// stored value is dead-lettered with that cause, and an id that is also
// leased, delayed or dead (a duplicate) is dropped from pending, since the
// item lives on elsewhere. One Claim looks at 2n entries at most.
func (q *Queue) Claim(ctx context.Context, n int) ([]Item, error) {
	c, err := q.ClaimDetailed(ctx, n)
	return c.Items, err
}

// Claimed is what one [Queue.ClaimDetailed] did.
type Claimed struct {
	// Items are the items leased, in queue order; empty, not nil, when
	// none was pending.
	Items []Item
	// Promoted counts the delayed items that were due and went back to
	// the queue, before the claim.
	Promoted int
	// Recovered counts the expired leases handed back, before the claim:
	// to the queue, or to the dead letters at their last attempt.
	Recovered int
	// More says that Promoted or Recovered reached the claim's n, the
	// bound of each: more may be due or expired, for the next claim.
	More bool
}

// ClaimDetailed is [Queue.Claim], which it does in the same one script
// call, and reports the maintenance done before the claim too: a worker
// that claims in a loop claims again soon while More is true, even if
// this call's Items were few.
func (q *Queue) ClaimDetailed(ctx context.Context, n int) (Claimed, error) {
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
	if len(reply)%3 != 2 || len(own)%2 != 0 {
		return Claimed{}, q.wrap("claim", fmt.Errorf("%w: %d values, %d limits", errUnexpectedScript, len(reply), len(own)))
	}
	ms, _ := reply[0].(int64)
	deadline := time.UnixMilli(ms)
	// A token is the attempt and the claim's "-number": the script sends
	// the number once rather than a token per item.
	suffix, _ := reply[3].(string)
	items := make([]Item, 0, len(reply)/3-1)
	for i := 5; i < len(reply); i += 3 {
		id, _ := reply[i].(string)
		payload, _ := reply[i+1].(string)
		attempt, _ := reply[i+2].(int64)
		items = append(items, Item{
			ID: id, Payload: []byte(payload), Attempt: int(attempt), MaxAttempts: q.cfg.MaxAttempts,
			Deadline: deadline, Token: strconv.FormatInt(attempt, 10) + suffix,
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
	c.Items = items
	return c, nil
}

// Extend moves the lease of a claimed item to Redis time + d, for work
// that takes longer than Config.Lease, and returns the new deadline. It
// returns ErrLeaseLost if the claim is no longer current.
func (q *Queue) Extend(ctx context.Context, it Item, d time.Duration) (time.Time, error) {
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

// Release hands claimed items back at once, to the head of the queue,
// without counting the attempt: for items a worker claimed but could not
// start (its time ran out). Items whose claim is no longer current are
// skipped; it returns how many were released.
func (q *Queue) Release(ctx context.Context, items ...Item) (int, error) {
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
