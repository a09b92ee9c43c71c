package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/queue"
)

const (
	ordersQueue = "confirmations"
	sentKey     = "example:sent"         // order id -> the confirmation as sent
	failedKey   = "example:failed-once:" // + order id: its first send failed
	failedTTL   = time.Hour              // how long that is remembered
	unluckyEach = 10                     // every tenth order's first send fails
	sendDelay   = 2 * time.Millisecond   // a mail server is slow
	statusWait  = 2 * time.Second        // how long a status request waits
	maxQuantity = 100                    // per order
)

// The statuses of an order, on every stack.
const (
	sentStatus = "sent"
	waitStatus = "pending"
	deadStatus = "failed"
)

// ordersConfig retries quickly, so that a failed send is promoted and sent
// again within seconds of the example's start.
var ordersConfig = queue.Config{BackoffBase: time.Second, BackoffMax: 5 * time.Second}

var (
	errBadOrder       = errors.New("bad order")
	errNoSuchOrder    = errors.New("no such order")
	errMailServerBusy = errors.New("mail server busy (simulated: every tenth order's first send fails)")
)

// order is what a client places; its confirmation message is the queue
// item's payload.
type order struct {
	Customer string `json:"customer"`
	ItemID   int    `json:"item_id"`
	Quantity int    `json:"quantity"`
	Seq      int64  `json:"seq,omitempty"` // set by the server; picks the unlucky orders
}

func (o order) validate() error {
	switch {
	case o.Customer == "" || len(o.Customer) > 64:
		return fmt.Errorf("%w: a customer of 1 to 64 bytes is required", errBadOrder)
	case o.ItemID < 0 || o.ItemID >= catalogSize:
		return fmt.Errorf("%w: item_id %d is not in the catalog (0 to %d)", errBadOrder, o.ItemID, catalogSize-1)
	case o.Quantity < 1 || o.Quantity > maxQuantity:
		return fmt.Errorf("%w: quantity %d is not in 1 to %d", errBadOrder, o.Quantity, maxQuantity)
	}
	return nil
}

// placeOrder enqueues the order's confirmation and renews the customer's
// session; the confirmation is sent by stolen work (the drain job).
func (a *app) placeOrder(ctx context.Context, o order) (id string, err error) {
	if err := o.validate(); err != nil {
		return "", err
	}
	o.Seq = a.orderSeq.Add(1)
	payload, _ := json.Marshal(o)
	if id, err = a.orders.Enqueue(ctx, payload); err != nil {
		return "", err
	}
	a.count.placed.Add(1)
	if err := a.sessions.Set(ctx, o.Customer, []byte(sessionData), sessionTTL); err != nil {
		a.logger.WarnContext(ctx, "session not renewed", "customer", o.Customer, "err", err)
	}
	return id, nil
}

// orderStatus returns "sent" and the confirmation, "pending", or "failed"
// (dead-lettered, with the cause). A confirmation already sent is a fast
// exit; otherwise it waits up to statusWait for it.
func (a *app) orderStatus(ctx context.Context, id string) (status, confirmation string, err error) {
	if id == "" {
		return "", "", fmt.Errorf("%w: empty id", errNoSuchOrder)
	}
	if result, err := a.orders.Result(ctx, id); err == nil {
		a.fastExit(ctx)
		return sentStatus, string(result), nil
	}
	wctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	result, err := a.orders.Wait(wctx, id)
	switch {
	case err == nil:
		return sentStatus, string(result), nil
	case errors.Is(err, queue.ErrDead):
		return deadStatus, err.Error(), nil
	case errors.Is(err, queue.ErrNotFound):
		return "", "", fmt.Errorf("%w: %s", errNoSuchOrder, id)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return waitStatus, "", nil
	}
	return "", "", err
}

// sendConfirmation is the drain job's handler: it "sends" one order's
// confirmation (records it in Redis) and returns it as the item's result.
// It is idempotent, as an at-least-once queue requires: sending again
// overwrites the record.
func (a *app) sendConfirmation(ctx context.Context, it queue.Item) ([]byte, error) {
	var o order
	if err := json.Unmarshal(it.Payload, &o); err != nil {
		return nil, fmt.Errorf("malformed order %s: %w", it.ID, err) // retried, then dead-lettered with the cause
	}
	if o.Seq%unluckyEach == 0 {
		first, err := a.rdb.SetNX(ctx, failedKey+it.ID, 1, failedTTL).Result()
		if err != nil {
			return nil, err
		}
		if first {
			return nil, errMailServerBusy
		}
	}
	select {
	case <-time.After(sendDelay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	msg := fmt.Sprintf("Dear %s, your order of %d x item %d is confirmed (order %s, attempt %d).",
		o.Customer, o.Quantity, o.ItemID, it.ID, it.Attempt)
	if err := a.rdb.HSet(ctx, sentKey, it.ID, msg).Err(); err != nil {
		return nil, err
	}
	a.count.sent.Add(1)
	a.logger.DebugContext(ctx, "confirmation sent", "order", it.ID, "customer", o.Customer, "attempt", it.Attempt)
	return []byte(msg), nil
}
