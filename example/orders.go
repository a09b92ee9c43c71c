package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

const (
	ordersQueue = "orders"
	sentKey     = "example:sent"         // order ref -> the confirmation as sent
	reservedKey = "example:reserved"     // order ref -> its hold on the stock
	chargedKey  = "example:charged"      // order ref -> the cents charged
	failedKey   = "example:failed-once:" // + order ref: its first send failed
	failedTTL   = time.Hour              // how long that is remembered
	unluckyEach = 10                     // every tenth order's first send fails
	sendDelay   = 2 * time.Millisecond   // a mail server is slow
	statusWait  = 2 * time.Second        // how long a status request waits
	maxQuantity = 100                    // per order
)

// The tasks of an order's chain, in their order, each with its arguments
// and result: reserve the stock, charge the customer, send the
// confirmation. Each step's result is the next one's arguments (the
// chain pipes them), and the last one's, the confirmation, is the
// chain's.
var (
	reserveTask = tasks.Define[order, reservation]("order.reserve")
	chargeTask  = tasks.Define[reservation, payment]("order.charge")
	confirmTask = tasks.Define[payment, string]("order.confirm")
)

// orderSteps are the chain's task types, as its status names them.
var orderSteps = [...]string{reserveTask.Type(), chargeTask.Type(), confirmTask.Type()}

// The statuses of an order, on every stack.
const (
	sentStatus = "sent"    // the chain is done: the confirmation is sent
	waitStatus = "pending" // a step is queued, running or waiting for its retry
	deadStatus = "failed"  // a step died: the chain stopped
)

// ordersConfig retries quickly, so that a failed send is promoted and sent
// again within seconds of the example's start.
var ordersConfig = queue.Config{BackoffBase: time.Second, BackoffMax: 5 * time.Second}

var (
	errBadOrder       = errors.New("bad order")
	errNoSuchOrder    = errors.New("no such order")
	errMailServerBusy = errors.New("mail server busy (simulated: every tenth order's first send fails)")
)

// order is what a client places, and the arguments of the reserve step.
type order struct {
	Customer string `json:"customer"`
	ItemID   int    `json:"item_id"`
	Quantity int    `json:"quantity"`
	Seq      int64  `json:"seq,omitempty"` // set by the server; picks the unlucky orders
	// Ref is set by the server: it names the order in the steps' records,
	// which the handlers write before the chain's id is known to them.
	Ref string `json:"ref,omitempty"`
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

// reservation is the result of the reserve step, piped to charge.
type reservation struct {
	Order order  `json:"order"`
	Hold  string `json:"hold"`
}

// payment is the result of the charge step, piped to confirm.
type payment struct {
	Order       order `json:"order"`
	AmountCents int64 `json:"amount_cents"`
}

// placeOrder enqueues the order's chain, reserve → charge → confirm, and
// renews the customer's session; stolen work runs the steps (the tasks
// job). The order's id is the chain's.
func (a *app) placeOrder(ctx context.Context, o order) (id string, err error) {
	if err := o.validate(); err != nil {
		return "", err
	}
	o.Seq = a.orderSeq.Add(1)
	if id, err = a.enqueueOrder(ctx, o); err != nil {
		return "", err
	}
	a.count.placed.Add(1)
	if err := a.sessions.Set(ctx, o.Customer, []byte(sessionData), sessionTTL); err != nil {
		a.logger.WarnContext(ctx, "session not renewed", "customer", o.Customer, "err", err)
	}
	return id, nil
}

// enqueueOrder gives o a fresh ref and enqueues its chain: one round trip.
func (a *app) enqueueOrder(ctx context.Context, o order) (string, error) {
	o.Ref = rand.Text()
	return tasks.EnqueueChain(ctx, a.client, []tasks.Step{
		reserveTask.Step(o), chargeTask.Pipe(), confirmTask.Pipe()})
}

// orderProgress is where an order's chain is, on every stack.
type orderProgress struct {
	Status       string // sentStatus, waitStatus or deadStatus
	Step, Steps  int    // the current step, of how many; Steps once sent
	Task         string // the current step's task type
	Confirmation string // the message as sent, once sent
	Cause        string // why the step died, once failed
}

// orderStatus reads the order's chain (tasks.ChainStatus): sent with the
// confirmation (a fast exit), failed with the cause of the step that
// died, or else it waits up to statusWait for the chain to end and says
// where it is then: pending at step k of 3.
func (a *app) orderStatus(ctx context.Context, id string) (orderProgress, error) {
	if id == "" {
		return orderProgress{}, fmt.Errorf("%w: empty id", errNoSuchOrder)
	}
	p, err := a.chainProgress(ctx, id)
	if err != nil || p.Status != waitStatus {
		if err == nil && p.Status == sentStatus {
			a.fastExit(ctx)
		}
		return p, err
	}
	wctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	_, err = tasks.WaitChain[string](wctx, a.client, id)
	switch {
	case err == nil, errors.Is(err, queue.ErrDead):
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
	default:
		return orderProgress{}, err
	}
	return a.chainProgress(ctx, id)
}

// chainProgress reads the order's chain in one round trip.
func (a *app) chainProgress(ctx context.Context, id string) (orderProgress, error) {
	ch, err := tasks.ChainStatus(ctx, a.client, id)
	switch {
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, tasks.ErrInvalidArgument):
		return orderProgress{}, fmt.Errorf("%w: %s", errNoSuchOrder, id)
	case err != nil:
		return orderProgress{}, err
	}
	p := orderProgress{Status: waitStatus, Step: ch.Step, Steps: ch.Steps}
	if ch.Step >= 1 && ch.Step <= len(orderSteps) {
		p.Task = orderSteps[ch.Step-1]
	}
	switch ch.State {
	case tasks.StateDone:
		var msg string // encoded by the tasks' default codec, JSON
		if err := json.Unmarshal(ch.Result, &msg); err != nil {
			return orderProgress{}, fmt.Errorf("order %s: confirmation: %w", id, err)
		}
		p.Status, p.Confirmation = sentStatus, msg
	case tasks.StateFailed:
		p.Status, p.Cause = deadStatus, ch.Cause
	}
	return p, nil
}

// newMux makes a Mux with the shop's handlers, the orders' steps and the
// sales report; sent counts the confirmations its handlers send, so that
// a process that steals and works (-role=both) says which sent how many.
// Each step is idempotent, as an at-least-once queue requires: doing it
// again writes the same record.
func (a *app) newMux(sent *atomic.Uint64) (*tasks.Mux, error) {
	mux := tasks.NewMux(tasks.WithLogger(a.logger), tasks.WithMeterProvider(a.meters), tasks.WithTracerProvider(a.tracers))
	err := errors.Join(
		reserveTask.Handle(mux, a.reserve),
		chargeTask.Handle(mux, a.charge),
		confirmTask.Handle(mux, func(ctx context.Context, p payment) (string, error) { return a.confirm(ctx, p, sent) }),
		reportTask.Handle(mux, a.salesReport),
	)
	return mux, err
}

// reserve holds the order's quantity of its item.
func (a *app) reserve(ctx context.Context, o order) (reservation, error) {
	if err := a.rdb.HSet(ctx, reservedKey, o.Ref, o.Quantity).Err(); err != nil {
		return reservation{}, err
	}
	return reservation{Order: o, Hold: "hold-" + o.Ref}, nil
}

// charge charges the customer for the reservation.
func (a *app) charge(ctx context.Context, r reservation) (payment, error) {
	amount := priceCents(r.Order.ItemID) * int64(r.Order.Quantity)
	if err := a.rdb.HSet(ctx, chargedKey, r.Order.Ref, amount).Err(); err != nil {
		return payment{}, err
	}
	return payment{Order: r.Order, AmountCents: amount}, nil
}

// confirm "sends" the order's confirmation (records it in Redis) and
// returns it as the chain's result. Every tenth order's first send fails,
// to show retries. sent counts the confirmations sent.
func (a *app) confirm(ctx context.Context, p payment, sent *atomic.Uint64) (string, error) {
	o := p.Order
	if o.Seq%unluckyEach == 0 {
		first, err := a.rdb.SetNX(ctx, failedKey+o.Ref, 1, failedTTL).Result()
		if err != nil {
			return "", err
		}
		if first {
			return "", errMailServerBusy
		}
	}
	select {
	case <-time.After(sendDelay):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	msg := fmt.Sprintf("Dear %s, your order of %d x item %d is confirmed: %d.%02d charged (order ref %s).",
		o.Customer, o.Quantity, o.ItemID, p.AmountCents/100, p.AmountCents%100, o.Ref)
	if err := a.rdb.HSet(ctx, sentKey, o.Ref, msg).Err(); err != nil {
		return "", err
	}
	sent.Add(1)
	a.logger.DebugContext(ctx, "confirmation sent", "ref", o.Ref, "customer", o.Customer)
	return msg, nil
}
