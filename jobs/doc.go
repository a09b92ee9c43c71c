// Package jobs holds the built-in jobs of worksteal: each is a
// [recruiter.Job] that does the maintenance a daemon or a cron job would
// otherwise do, in slices small enough to borrow from web servers.
//
//	q, err := queue.New(rdb, "thumbnails", queue.Config{})
//	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{})
//	err = rec.Register(tidy, recruiter.JobConfig{Rate: 0.01, Every: 10 * time.Second})
//
// # The jobs
//
//   - [TidyStale] hands a queue's expired leases back (crashed or stuck workers).
//   - [PromoteDue] moves a queue's delayed items whose retry time has come.
//   - [Drain] works a queue off, calling a [Handler] for each item.
//   - [EvictExpired] removes the expired fields of an [ExpiringHash].
//   - [EvictExpiredMembers] removes the expired members of a sorted set
//     scored by expiry time.
//
// Each takes a config struct whose zero value is valid, and derives a
// stable name from its queue or key ("tidy.QUEUE", "drain.QUEUE",
// "promote.QUEUE", "evict.KEY", "evict-members.KEY"), which the config's
// Name overrides: two jobs with the same name share one lock.
//
// # Slices and batches
//
// A slice works in batches of at most Batch entries ([BatchMax] at most),
// each one Lua script call (Drain: a claim and a settle), so Redis is never
// blocked for long. It makes batches until one is not full (nothing is
// left), or MaxBatches are done, or the budget left (ctx's deadline) is
// too small for another, judged by its slowest batch so far. Without a
// deadline and MaxBatches, a slice makes one batch. A batch once started is
// not cut at the deadline (each config's RedisTimeout bounds its calls
// instead): its work would be done in Redis all the same but go uncounted,
// and a claim cut short would strand its items until their leases expire.
// A slice reports the
// entries it handled as Items, and More when its last batch was full (or,
// for Drain, when it handed items back), so that the recruiter lets the
// next recruit continue at once.
//
// # Drain
//
// [Drain]'s handler takes one item at a time, so that the job, not the
// handler, decides which items were started: those it could not start
// before the deadline go back to the head of the queue at once, uncounted,
// and a handler that panics fails only its own item. Batching is in the
// Redis calls (one claim and one settle per batch) rather than in the
// handler.
//
// # Expiring hashes and Redis 7.4's HEXPIRE
//
// An [ExpiringHash] keeps its values in a hash and their expiry times in a
// sorted set beside it, both written by one script; [EvictExpired] removes
// up to Batch expired fields per script call, reading and removing them in
// the same script, so that a field set again with a later expiry between
// two slices is kept. Times come from Redis's TIME.
//
// Redis 7.4 and later expire hash fields by themselves (HEXPIRE, HPEXPIRE;
// Redis 8.0 adds HSETEX to write a field with its TTL in one command;
// Valkey has them since 9.0): there, for a plain hash, prefer them. They
// cost no slices and no second key, and Redis drops expired fields on
// access and in its own background cycle. What this package still offers:
//
//   - it works on Redis before 7.4, and on managed or compatible servers
//     without hash-field expiry;
//   - evictions are counted: each slice's Items reaches the recruiter's
//     stats, spans and metrics, and the work is bounded per slice and shown
//     on the status page rather than hidden in Redis's cycle;
//   - [EvictExpiredMembers] expires sorted-set members, which no Redis
//     version does: HEXPIRE covers hash fields only.
//
// It costs more memory (a sorted-set entry per field) and a script per
// write. There is no per-eviction callback: the scripts return counts,
// not names.
package jobs
