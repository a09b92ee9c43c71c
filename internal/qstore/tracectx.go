package qstore

import (
	"context"
	"fmt"
	"strings"
)

// Trace contexts. Package tasks carries the span context of the enqueue
// that made an item to the run that claims it, so that the run's span
// links to it: a W3C traceparent, which this package stores as an opaque
// string beside the item, never in its payload (whose size MaxPayload
// bounds, and whose envelope the previous release decodes).
//
// It is kept in a key of its own, TAG:trace:ID (a hash of one field, so
// that the commands it takes are those a worker's ACL grants already:
// docs/redis.md), rather than in a hash of the queue: the previous
// release's scripts do not know it, and an item that one of them acks or
// purges leaves it behind, so the key expires 7 days past the item's due
// time in any case (traces.lua). This release's ack, cancel and purge
// delete it at once. The key TAG:traced exists while any of them may: a
// queue never traced pays nothing in its claims and settles, which look
// at it within an EXISTS they make anyway.

// traceMax bounds a trace context: a traceparent is 55 bytes.
const traceMax = 256

func checkTrace(what, trace string) error {
	if len(trace) > traceMax {
		return fmt.Errorf("%w: %s's trace context of %d bytes is above %d", ErrInvalidArgument, what, len(trace), traceMax)
	}
	return nil
}

var childTraceScript = newScript("childtrace")

// childLinksMax bounds the children's contexts kept with a join's final
// item: a traceparent and a space each for JoinChildrenMax children.
const childLinksMax = JoinChildrenMax * 56

// KeepChildTrace keeps trace, the trace context of the run of child (an
// id "JOIN.n" of a join's child), with the join's final item, whose
// claims then return it after the final item's own context (see
// [Item].Trace). A retried child's runs are each kept, up to a bound. It
// does nothing for an id of another form.
func (q *Store) KeepChildTrace(ctx context.Context, child, trace string) error {
	join, _, ok := strings.Cut(child, ".")
	if !ok || trace == "" {
		return nil
	}
	if err := checkTrace("child "+child, trace); err != nil {
		return err
	}
	keys := []string{q.k.tag + ":trace:" + join}
	return q.wrap("keep child trace", childTraceScript.Run(ctx, q.rdb, keys, trace, childLinksMax, q.k.tag).Err())
}

// SplitTrace splits an [Item]'s Trace into its enqueue's trace context
// and, for a join's final item, its children's runs'.
func SplitTrace(trace string) (enqueue string, children []string) {
	enqueue, rest, ok := strings.Cut(trace, " ")
	if ok {
		children = strings.Fields(rest)
	}
	return enqueue, children
}
