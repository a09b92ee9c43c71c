// Package jobs holds the built-in jobs of worksteal: each is a
// [recruiter.Job] that does the maintenance a daemon or a cron job would
// otherwise do, in slices small enough to borrow from web servers.
//
//	q, err := queue.New(rdb, "thumbnails", queue.Config{})
//	drain, err := jobs.Drain(q, handle, jobs.DrainConfig{})
//	err = rec.Register(drain, recruiter.JobConfig{Every: time.Second})
//
// # The jobs
//
//   - [Drain] works a queue off, calling a [Handler] for each item, and
//     maintains it: its claims bring back the retries and delayed items
//     that are due and the expired leases of crashed or stuck workers.
//   - [TidyStale] hands a queue's expired leases back, and [PromoteDue]
//     moves its delayed items whose time has come: what a Drain's claims
//     do already, for a queue that no Drain works (see below).
//   - [QueueDepth] reads a queue's depth, once per Every fleet-wide, for
//     the gauges that dashboards and alerts read (see below).
//   - [EvictExpired] removes the expired fields of an [exphash.Hash].
//   - [EvictExpiredMembers] removes the expired members of a sorted set
//     scored by expiry time.
//
// Each takes a config struct whose zero value is valid and which embeds
// [Batching], the settings they share (Batch, MaxBatches, Name,
// RedisTimeout), with defaults per job documented on each config;
// QueueDepth, which makes one call a slice, takes Name and RedisTimeout
// alone. Each
// derives a stable name from its queue or key ("tidy.QUEUE",
// "drain.QUEUE", "promote.QUEUE", "depth.QUEUE", "evict.KEY",
// "evict-members.KEY"), which the config's Name overrides: two jobs with the same name share one lock.
// [BatchJob] makes a job of the same kind from a step of one's own.
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
// batch was full (or, for Drain, when it handed items back or its claim's
// maintenance reached its bound), so that the recruiter lets the next
// recruit continue at once.
//
// # Drain
//
// A Drain is all a queue needs: each of its claims
// ([queue.Queue.Claim]) first promotes what is due and hands back what
// expired, up to the batch's size of each, in the same script call, so
// retries, delayed items and a crashed worker's leases come back with no
// other job, at no round trip of their own; a slice reports More while
// either step reached its bound. [TidyStale] and [PromoteDue] earn their
// place only for a queue whose items your own workers claim (rarely, or
// not at the moment): there they keep retries, delayed items and expired
// leases moving, and Depth counting them as pending, in the meantime.
// Registered beside a Drain they are harmless, and mostly find nothing.
//
// [Drain]'s handler takes one item at a time, so that the job, not the
// handler, decides which items were started: those it could not start
// before the deadline go back to the head of the queue at once, uncounted,
// and a handler that panics fails only its own item. Batching is in the
// Redis calls (one claim and one settle per batch) rather than in the
// handler.
//
// # How a Drain's slice works
//
// Redis works while the handlers do: a batch is settled while the next one
// is handled, and the one after is claimed meanwhile if the budget left
// fits it (after the settle, when an ack enqueues a chain's next step, so
// that the claim takes it). Items of a few microseconds run one after
// another on one goroutine, cheaper than a goroutine each.
//
// A slice claims a batch only while the budget left fits some of it, at
// the items' mean time so far, and starts an item only while the budget
// left and the batch's lease both fit the slowest item so far and the calls
// after it; its first items start blind, so that an item slower than any
// budget still runs. Once it has started an item, it starts no more while
// the process is busy. What it did not start is released
// ([queue.Queue.Release]) as the rest is settled. A handler's context ends
// before the lease by three round trips or a quarter of the lease (at most
// RedisTimeout), whichever is more, up to half the lease, so that the
// settle reaches Redis before a claim or [TidyStale] may take the
// item back; an item interrupted so is nacked like any failure, and one too
// slow for its lease ends in the dead letters rather than running forever.
//
// On Linux a slice reads the thread CPU time of one item in four, and
// after each batch runs as many handlers at once as keep half the
// process's CPUs (GOMAXPROCS/2, at least one) busy at that rate, at most
// Concurrency; the next slice starts with that number. A goroutine that
// has run handlers for a millisecond yields before its next item, so that
// a request's goroutine queued behind it runs.
//
// A batch whose handlers run longer than 100 ms reads which of its items
// are canceled, one read per batch per 100 ms whatever the number of
// handlers (a subscription would hold a connection per process for a rare
// event). The read covers the items yet to start too, this batch's and
// those of the batch claimed ahead: an item starts only within 150 ms of
// the sending of a read that found it not canceled (its claim or a poll;
// past that, its start reads first), and Cancel of a leased item waits
// those 150 ms before it returns. A canceled item is passed over, and
// settled as a canceled running one is.
//
// # A queue's depth as metrics
//
// [QueueDepth] makes a metric of [queue.Queue.Depth] without a Redis call
// per scrape: its slices read the depth (one script call in O(log n)),
// one process at a time under the job's lock, and the process that read
// reports the reading as gauges for [DepthConfig].MaxAge. A panel or an
// alert takes max by queue and state across the processes; summing would
// count a queue once per process that reports it.
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
