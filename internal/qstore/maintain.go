package qstore

import (
	"context"

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
)

// Promote is Claim's promoting step on its own, for up to max due items,
// the earliest due first: jobs.PromoteDue's batch.
func (q *Store) Promote(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "promote", promoteScript, q.k.promoteKeys, max)
}

// RequeueDead moves up to max dead letters, the oldest first, back to
// pending with a fresh count of attempts: inspect.RetryAllDead's batch.
func (q *Store) RequeueDead(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "requeue dead", requeueScript, q.k.requeueKeys, max)
}

// PurgeDead deletes up to max dead letters, the oldest first, and all
// that is kept of them: inspect.PurgeAllDead's batch.
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
