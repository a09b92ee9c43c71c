package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// sessionsKey is an exphash.Hash: customer -> session, each field
	// with its own expiry; the evict job removes the expired ones.
	sessionsKey  = "example:sessions"
	sessionTTL   = 10 * time.Minute // renewed by each order
	sessionData  = `{"cart":[]}`    // what a session holds; the example only expires them
	seedExpired  = 200              // sessions seeded already expired
	seedLive     = 50               // and live ones, which stay
	evictBatch   = 50               // the most sessions one slice evicts
	expiredField = "expired-"       // + number: the seeded expired sessions
)

// seedSessions writes seedExpired sessions that expire at once, so the
// evict job has work within seconds, and seedLive that stay.
func (a *app) seedSessions(ctx context.Context) error {
	for i := range seedExpired {
		if err := a.sessions.Set(ctx, fmt.Sprintf("%s%03d", expiredField, i), []byte(sessionData), time.Millisecond); err != nil {
			return err
		}
	}
	for i := range seedLive {
		if err := a.sessions.Set(ctx, fmt.Sprintf("customer-%03d", i), []byte(sessionData), sessionTTL); err != nil {
			return err
		}
	}
	return nil
}

// sessionCounts returns the sessions stored and how many of them have
// expired but are not evicted yet, by this process's clock.
func (a *app) sessionCounts(ctx context.Context) (stored, expired int64, err error) {
	_, expiry := a.sessions.Keys()
	pipe := a.rdb.Pipeline()
	all := pipe.ZCard(ctx, expiry)
	due := pipe.ZCount(ctx, expiry, "-inf", strconv.FormatInt(time.Now().UnixMilli(), 10))
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, 0, err
	}
	return all.Val(), due.Val(), nil
}
