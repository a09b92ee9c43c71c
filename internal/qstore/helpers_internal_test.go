package qstore

import (
	"cmp"
	"time"

	"github.com/redis/go-redis/v9"
)

// testStore is New with cfg's zero fields at package queue's defaults,
// which tests inside this package cannot import (queue imports it).
func testStore(rdb redis.UniversalClient, name string, cfg Config) *Store {
	cfg.BackoffBase = cmp.Or(cfg.BackoffBase, time.Second)
	cfg.BackoffMax = cmp.Or(cfg.BackoffMax, 10*time.Minute)
	cfg.Lease = cmp.Or(cfg.Lease, 30*time.Second)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 5)
	cfg.MaxPayload = cmp.Or(cfg.MaxPayload, 1<<20)
	cfg.Prefix = cmp.Or(cfg.Prefix, "worksteal")
	cfg.ResultRetention = cmp.Or(cfg.ResultRetention, 24*time.Hour)
	cfg.WaitBlock = cmp.Or(cfg.WaitBlock, time.Second)
	return New(rdb, name, cfg)
}
