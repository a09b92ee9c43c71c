// Package jobs holds the built-in jobs of worksteal: each is a
// [recruiter.Job] that does the maintenance a daemon or a cron job would
// otherwise do, in slices small enough to borrow from web servers.
//
//	q, err := queue.New(rdb, "thumbnails", queue.Config{})
//	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{})
//	err = rec.Register(tidy, recruiter.JobConfig{Every: 10 * time.Second})
//
// # The jobs
//
//   - [TidyStale] hands a queue's expired leases back (crashed or stuck workers).
//   - [PromoteDue] moves a queue's delayed items (retries, delayed
//     enqueues) whose time has come.
//   - [Drain] works a queue off, calling a [Handler] for each item.
//   - [EvictExpired] removes the expired fields of an [exphash.Hash].
//   - [EvictExpiredMembers] removes the expired members of a sorted set
//     scored by expiry time.
//
// Each takes a config struct whose zero value is valid and which embeds
// [Batching], the settings they share (Batch, MaxBatches, Name,
// RedisTimeout), with defaults per job documented on each config. Each
// derives a stable name from its queue or key ("tidy.QUEUE",
// "drain.QUEUE", "promote.QUEUE", "evict.KEY", "evict-members.KEY"), which
// Batching's Name overrides: two jobs with the same name share one lock.
// [Batched] makes a job of the same kind from a step of one's own.
//
// # Slices and batches
//
// A slice works in batches of at most Batch entries (1,000 at most),
// each one Lua script call (Drain: a claim and a settle), so Redis is never
// blocked for long. It makes batches until one is not full (nothing is
// left), or MaxBatches are done, or the budget left (ctx's deadline) is
// too small for another, judged by its slowest batch so far. Without a
// deadline and MaxBatches, a slice makes one batch. A batch once started is
// not cut at the deadline (each config's RedisTimeout bounds its calls
// instead): its work would be done in Redis all the same but go uncounted,
// and a claim cut short would strand its items until their leases expire.
// A slice reports the entries it handled as Items, and More when its last
// batch was full (or, for Drain, when it handed items back), so that the
// recruiter lets the next recruit continue at once.
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
// # Expiring hashes and sorted sets
//
// [EvictExpired] evicts an [exphash.Hash], a hash whose fields expire one
// by one on any Redis, calling [exphash.Hash.Evict] once a batch; see
// package exphash for when Redis 7.4's HEXPIRE serves better.
// [EvictExpiredMembers] expires sorted-set members, which no Redis version
// does by itself: HEXPIRE covers hash fields only. Each batch reads and
// removes in one script, so an entry given a later expiry in between is
// kept. Times come from Redis's TIME.
package jobs
