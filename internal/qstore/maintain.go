package qstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	tidyScript = newScript("tidy")
	// Promote, requeue and purge act on given ids or else on a count of
	// items (byid.lua): one script serves the queue's call and the
	// operators' by-id one (admin.go).
	promoteScript = newScript("promote")
	requeueScript = newScript("requeue")
	purgeScript   = newScript("purge")
	deadScript    = newScript("dead")
)

// Tidy is queue.Queue.Tidy: Claim's tidying step on its own.
func (q *Store) Tidy(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "tidy", tidyScript, q.k.tidyKeys, max, q.cfg.MaxAttempts)
}

// Promote is queue.Queue.Promote: Claim's promoting step on its own.
func (q *Store) Promote(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "promote", promoteScript, q.k.promoteKeys, max)
}

// RequeueDead is queue.Queue.RequeueDead.
func (q *Store) RequeueDead(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "requeue dead", requeueScript, q.k.requeueKeys, max)
}

// PurgeDead is queue.Queue.PurgeDead.
func (q *Store) PurgeDead(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "purge dead", purgeScript, q.k.purgeKeys, max)
}

func (q *Store) runCount(ctx context.Context, op string, s *redis.Script, keys []string, max int, args ...any) (int, error) {
	if err := checkCount(op+" max", max); err != nil {
		return 0, err
	}
	n, err := s.Run(ctx, q.rdb, keys, append([]any{max}, args...)...).Int()
	return n, q.wrap(op, err)
}

// DeadItem is queue.DeadItem: the same fields, in the same order.
type DeadItem struct {
	ID       string
	Attempts int
	Cause    string
	Died     time.Time
}

// Dead is queue.Queue.Dead.
func (q *Store) Dead(ctx context.Context, max int) ([]DeadItem, error) {
	if err := checkCount("dead max", max); err != nil {
		return nil, err
	}
	reply, err := deadScript.Run(ctx, q.rdb, q.k.deadKeys, max).Slice()
	if err != nil {
		return nil, q.wrap("dead", err)
	}
	if len(reply)%4 != 0 {
		return nil, q.wrap("dead", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	items := make([]DeadItem, 0, len(reply)/4)
	for i := 0; i < len(reply); i += 4 {
		id, _ := reply[i].(string)
		died, _ := reply[i+1].(int64)
		cause, _ := reply[i+2].(string)
		attempts, _ := reply[i+3].(int64)
		items = append(items, DeadItem{ID: id, Died: time.UnixMilli(died), Cause: cause, Attempts: int(attempts)})
	}
	return items, nil
}
