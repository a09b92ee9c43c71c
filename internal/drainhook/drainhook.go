// Package drainhook lets package tasks make the drain of package jobs
// with a handler whose ack enqueues a follow-up (a chain's next step) in
// the same script call: what a Mux's job needs and a plain queue's user
// never does, so jobs does not export it. Package jobs fills in [Drain] in
// its init, as the owners of internal/hooks' functions do.
package drainhook

import (
	"context"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Handler does the work of one claimed item, as a jobs.Handler does, and
// may return the item that follows it: next, when not nil, is enqueued by
// the item's ack, in the same script call, so that it is added once, and
// only if the ack is. A failed item's next is dropped.
type Handler func(ctx context.Context, it qstore.Item) (result []byte, next *qstore.FollowUp, err error)

// Drain is jobs.Drain(q, …, cfg) with h for handler; cfg is a
// jobs.DrainConfig (this package cannot name it: jobs imports it).
var Drain func(q *queue.Queue, h Handler, cfg any) (recruiter.Job, error)
