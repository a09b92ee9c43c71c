package qstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var settleScript = newScript("settle")

// notifyTTL is how long an item's wake-up list lives after its Ack or its
// dead-lettering: waiters read the state before blocking, so it only has
// to outlast the gap between that read and their blocking read.
const notifyTTL = time.Minute

// causeMax bounds a stored failure cause, in bytes.
const causeMax = 1024

// The kinds of settlement settle.lua is sent, one per item: the script tells
// an ack from a nack by them alone, never by the backoff.
const (
	kindAck      = "a"
	kindNack     = "n"
	kindFollowUp = "t" // an ack with a follow-up
	kindDead     = "d" // a nack that dead-letters now (see Verdict)
	kindSnooze   = "s" // a nack that uses no attempt (see Verdict)
)

// Settlement is queue.Settlement, its Item of this package, and a
// follow-up.
type Settlement struct {
	Item   Item
	Result []byte
	Err    error
	// FollowUp, with an ack, is an item that the ack enqueues in the same
	// script call (a nack ignores it): see [FollowUp].
	FollowUp *FollowUp
}

// SettleResult is queue.SettleResult: the same fields, in the same order.
type SettleResult struct {
	Acked, Retried, Dead, Canceled int
	Lost                           []string
}

// Settle is queue.Queue.Settle, and more: an ack with a [FollowUp]
// enqueues it in the same script call, and moves the follow-up's chain,
// if any, on to it. The ack of a join's child counts the join down, and
// the one that ends it enqueues its final item (see [Store.EnqueueJoin]);
// a nack of a child to the dead letters wakes the join's waiters.
func (q *Store) Settle(ctx context.Context, settlements ...Settlement) (s SettleResult, err error) {
	// An ack that enqueued a next step or a join's final item rings the
	// bell, so that it starts soon.
	follows := false
	defer func() {
		if follows && s.Acked > 0 {
			q.bell.Ring()
		}
	}()
	for _, o := range settlements {
		follows = follows || o.Err == nil && (o.FollowUp != nil || joinOf(o.Item.ID) != "")
		if err := checkItem(o.Item); err != nil {
			return s, err
		}
		if o.FollowUp != nil && o.Err == nil {
			if len(o.FollowUp.Payload) == 0 {
				return s, fmt.Errorf("%w: follow-up of item %s", ErrEmptyPayload, o.Item.ID)
			}
			if !o.FollowUp.Chain.isZero() {
				if err := o.FollowUp.Chain.validate(false); err != nil {
					return s, fmt.Errorf("follow-up of item %s: %w", o.Item.ID, err)
				}
			}
			if len(o.FollowUp.Unique) > uniqueMax {
				return s, fmt.Errorf("%w: follow-up of item %s: Unique key of %d bytes is above %d", ErrInvalidArgument, o.Item.ID, len(o.FollowUp.Unique), uniqueMax)
			}
			if err := checkTrace("follow-up of item "+o.Item.ID, o.FollowUp.Trace); err != nil {
				return s, err
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
			if err == nil && o.FollowUp != nil {
				err = q.checkPayload("follow-up", o.FollowUp.Payload)
			}
			if err == nil {
				stored := make([]byte, 0, len(o.Item.Token)+1+len(o.Result))
				stored = append(append(append(stored, o.Item.Token...), ':'), o.Result...)
				if o.FollowUp == nil {
					args = append(args, o.Item.ID, o.Item.Token, kindAck, stored, 0) // an ack has no backoff
					continue
				}
				// The chain record's and the lock's indices in KEYS, from 1;
				// 0 for none.
				record, lock := 0, 0
				if !o.FollowUp.Chain.isZero() {
					keys = append(keys, q.k.chain(o.FollowUp.Chain.ID))
					record = len(keys)
				}
				if o.FollowUp.Unique != "" {
					keys = append(keys, q.k.unique(o.FollowUp.Unique))
					lock = len(keys)
				}
				args = append(args, o.Item.ID, o.Item.Token, kindFollowUp, stored, 0,
					newID(), o.FollowUp.Payload, record, o.FollowUp.Chain.Step, o.FollowUp.Chain.Steps, lock, o.FollowUp.Trace)
				continue
			}
			kind, cause, backoff := q.failure(o.Item, err)
			args = append(args, o.Item.ID, o.Item.Token, kind, cause, backoff)
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
			case 4:
				s.Canceled++
			default:
				s.Lost = append(s.Lost, chunk[i].Item.ID)
			}
		}
	}
	return s, nil
}

// Ack is queue.Queue.Ack.
func (q *Store) Ack(ctx context.Context, it Item, result []byte) error {
	if err := q.checkPayload("result", result); err != nil {
		return err
	}
	return q.settleOne(ctx, "ack", Settlement{Item: it, Result: result})
}

// Nack is queue.Queue.Nack.
func (q *Store) Nack(ctx context.Context, it Item, cause error) error {
	if cause == nil {
		cause = errNacked
	}
	return q.settleOne(ctx, "nack", Settlement{Item: it, Err: cause})
}

var errNacked = errors.New("nacked without a cause")

func (q *Store) settleOne(ctx context.Context, op string, o Settlement) error {
	s, err := q.Settle(ctx, o)
	if err != nil {
		return err
	}
	if len(s.Lost) > 0 {
		return q.wrap(op, fmt.Errorf("%w: %s (token %s)", ErrLeaseLost, o.Item.ID, o.Item.Token))
	}
	if s.Canceled > 0 {
		return q.wrap(op, fmt.Errorf("%w: %s while it ran: its outcome is dropped", ErrCanceled, o.Item.ID))
	}
	return nil
}
