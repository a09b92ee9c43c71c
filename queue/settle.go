package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/text"
)

var (
	//go:embed settle.lua
	settleSource string
	settleScript = redis.NewScript(expiredSource + uniqueSource + settleSource)
)

// notifyTTL is how long an item's wake-up list lives after its Ack or its
// dead-lettering: waiters read the state before blocking, so it only has
// to outlast the gap between that read and their blocking read.
const notifyTTL = time.Minute

// causeMax bounds a stored failure cause, in bytes.
const causeMax = 1024

// The kinds of settlement settle.lua is sent, one per item: the script tells
// an ack from a nack by them alone, never by the backoff.
const (
	kindAck  = "a"
	kindNack = "n"
	kindThen = "t" // an ack with a follow-up
)

// Settlement is what became of one claimed item, for [Queue.Settle].
type Settlement struct {
	Item Item
	// Result is stored by an ack (Err nil); nil stores an empty result.
	Result []byte
	// Err, when not nil, makes the settlement a nack; its text is the cause.
	Err error
	// Then, with an ack, is an item that the ack enqueues in the same
	// script call (a nack ignores it): see [Then].
	Then *Then
}

// SettleResult counts what a [Queue.Settle] did.
type SettleResult struct {
	Acked   int // results stored
	Retried int // nacked, delayed for a retry
	Dead    int // nacked at the last attempt, dead-lettered
	// Lost lists the ids whose claim was no longer current (the lease
	// expired, and Tidy or another worker took the item): nothing changed.
	Lost []string
}

// Settle acks and nacks claimed items in one round trip per [BatchMax]
// settlements. An ack with a [Then] enqueues its follow-up in the same
// script call, and moves the follow-up's chain, if any, on to it. The ack
// of a join's child counts the join down, and the one that ends it
// enqueues its final item (see [Queue.EnqueueJoin]); a nack of a child to
// the dead letters wakes the join's waiters. An ack stores the result for
// Config.ResultRetention, drops the item's value and lease, and wakes its
// waiters. A nack at an attempt below Config.MaxAttempts (or the item's
// own, [EnqueueOptions.MaxAttempts]) delays the item by the backoff; at
// the last attempt it dead-letters the item with the cause and wakes its
// waiters.
//
// An ack whose result is larger than Config.MaxPayload is turned into a
// nack with ErrPayloadTooLarge as the cause, so one item cannot fail a
// batch. Settling again an item that this very claim already acked counts
// it as acked again: a retried call is harmless.
func (q *Queue) Settle(ctx context.Context, settlements ...Settlement) (SettleResult, error) {
	var s SettleResult
	for _, o := range settlements {
		if err := checkItem(o.Item); err != nil {
			return s, err
		}
		if o.Then != nil && o.Err == nil {
			if len(o.Then.Payload) == 0 {
				return s, fmt.Errorf("%w: follow-up of item %s", ErrEmptyPayload, o.Item.ID)
			}
			if !o.Then.Chain.isZero() {
				if err := o.Then.Chain.validate(false); err != nil {
					return s, fmt.Errorf("follow-up of item %s: %w", o.Item.ID, err)
				}
			}
			if len(o.Then.Unique) > uniqueMax {
				return s, fmt.Errorf("%w: follow-up of item %s: Unique key of %d bytes is above %d", ErrInvalidArgument, o.Item.ID, len(o.Then.Unique), uniqueMax)
			}
		}
	}
	for start := 0; start < len(settlements); start += BatchMax {
		chunk := settlements[start:min(start+BatchMax, len(settlements))]
		keys := make([]string, 0, len(q.k.settleKeys)+len(chunk))
		keys = append(keys, q.k.settleKeys...)
		for _, o := range chunk {
			keys = append(keys, q.k.notify(o.Item.ID))
		}
		args := make([]any, 0, 4+5*len(chunk))
		args = append(args, q.cfg.ResultRetention.Milliseconds(), notifyTTL.Milliseconds(), q.cfg.MaxAttempts, encodingPin)
		for _, o := range chunk {
			err := o.Err
			if err == nil {
				err = q.checkPayload("result", o.Result)
			}
			if err == nil && o.Then != nil {
				err = q.checkPayload("follow-up", o.Then.Payload)
			}
			if err == nil {
				stored := make([]byte, 0, len(o.Item.Token)+1+len(o.Result))
				stored = append(append(append(stored, o.Item.Token...), ':'), o.Result...)
				if o.Then == nil {
					args = append(args, o.Item.ID, o.Item.Token, kindAck, stored, 0) // an ack has no backoff
					continue
				}
				// The chain record's and the lock's indices in KEYS, from 1;
				// 0 for none.
				record, lock := 0, 0
				if !o.Then.Chain.isZero() {
					keys = append(keys, q.k.chain(o.Then.Chain.ID))
					record = len(keys)
				}
				if o.Then.Unique != "" {
					keys = append(keys, q.k.unique(o.Then.Unique))
					lock = len(keys)
				}
				args = append(args, o.Item.ID, o.Item.Token, kindThen, stored, 0,
					newID(), o.Then.Payload, record, o.Then.Chain.Step, o.Then.Chain.Steps, lock)
				continue
			}
			backoff := q.cfg.backoff(o.Item.Attempt).Milliseconds()
			args = append(args, o.Item.ID, o.Item.Token, kindNack, text.Truncate(err.Error(), causeMax, ""), backoff)
		}
		// A join's child counts its join down: its record and its final
		// item's wake-up list, after every other key, in the items' order.
		for _, o := range chunk {
			if join := joinOf(o.Item.ID); join != "" {
				keys = append(keys, q.k.join(join), q.k.notify(join))
			}
		}
		codes, err := settleScript.Run(ctx, q.rdb, keys, args...).Int64Slice()
		if err != nil {
			return s, q.wrap("settle", err)
		}
		if len(codes) != len(chunk) {
			return s, q.wrap("settle", fmt.Errorf("%w: %d codes for %d items", errUnexpectedScript, len(codes), len(chunk)))
		}
		for i, c := range codes {
			switch c {
			case 1:
				s.Acked++
			case 2:
				s.Retried++
			case 3:
				s.Dead++
			default:
				s.Lost = append(s.Lost, chunk[i].Item.ID)
			}
		}
	}
	return s, nil
}

// Ack marks a claimed item done with its result (see [Queue.Settle]). It
// returns ErrPayloadTooLarge, changing nothing, for a result above
// Config.MaxPayload, and ErrLeaseLost if the claim is no longer current.
func (q *Queue) Ack(ctx context.Context, it Item, result []byte) error {
	if err := q.checkPayload("result", result); err != nil {
		return err
	}
	return q.settleOne(ctx, "ack", Settlement{Item: it, Result: result})
}

// Nack reports a failed attempt: the item is retried after the backoff, or
// dead-lettered with cause at its last attempt (see [Queue.Settle]). It
// returns ErrLeaseLost if the claim is no longer current.
func (q *Queue) Nack(ctx context.Context, it Item, cause error) error {
	if cause == nil {
		cause = errNacked
	}
	return q.settleOne(ctx, "nack", Settlement{Item: it, Err: cause})
}

var errNacked = errors.New("nacked without a cause")

func (q *Queue) settleOne(ctx context.Context, op string, o Settlement) error {
	s, err := q.Settle(ctx, o)
	if err != nil {
		return err
	}
	if len(s.Lost) > 0 {
		return q.wrap(op, fmt.Errorf("%w: %s (token %s)", ErrLeaseLost, o.Item.ID, o.Item.Token))
	}
	return nil
}
