package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/recruiter"
)

const (
	sessionsKey   = "example:sessions" // member -> expiry, unix ms
	sessionsSeed  = 500
	sessionsBatch = 100 // the most sessions one slice evicts
)

// seedSessions replaces the session store with sessionsSeed sessions: every
// other one expired up to 500s ago, the rest expiring 1 to 10 minutes from
// now, so a short run evicts exactly the expired half.
func seedSessions(ctx context.Context, rdb redis.Cmdable, now time.Time) error {
	sessions := make([]redis.Z, sessionsSeed)
	for i := range sessions {
		expiry := now.Add(time.Minute + time.Duration(i)*time.Second)
		if i%2 == 0 {
			expiry = now.Add(-time.Duration(i+1) * time.Second)
		}
		sessions[i] = redis.Z{Score: float64(expiry.UnixMilli()), Member: fmt.Sprintf("session-%03d", i)}
	}
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, sessionsKey)
		p.ZAdd(ctx, sessionsKey, sessions...)
		return nil
	})
	return err
}

// evictSessions is the job that a cron would otherwise run: the built-in
// eviction of sorted-set members scored by expiry, one bounded batch a
// slice here, so that the status page shows the slices come and go; a
// full batch reports More, so the next recruit continues at once.
func evictSessions(rdb redis.Scripter) (recruiter.Job, error) {
	return jobs.EvictExpiredMembers(rdb, sessionsKey, jobs.EvictConfig{
		Batch: sessionsBatch, MaxBatches: 1, Name: "evict-sessions",
	})
}
