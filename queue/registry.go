package queue

import (
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/registry"
)

// noteRegistry notes the queue for the registry that operators' tools
// list (internal/registry): in memory only, written by a recruiter on the
// same client, so New still makes no Redis call.
func noteRegistry(rdb redis.UniversalClient, name string, cfg Config) {
	registry.NoteQueue(rdb, cfg.Prefix, registry.Queue{Name: name, LeaseMS: cfg.Lease.Milliseconds(),
		MaxAttempts: cfg.MaxAttempts, RetentionMS: cfg.ResultRetention.Milliseconds()})
}
