package qstore

import "fmt"

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
