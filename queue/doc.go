// Package queue is a reliable work queue in Redis: at-least-once delivery,
// nothing lost when a worker crashes, Redis Cluster safe, and costs that
// stay flat as the queue grows. Whoever claims from a queue keeps it
// moving; package jobs drains it in stolen time.
//
//	q, err := queue.New(rdb, "thumbnails", queue.Config{})
//	id, err := q.Enqueue(ctx, payload)
//	// a worker:
//	items, err := q.Claim(ctx, 100)
//	for _, it := range items { ... q.Ack(ctx, it, result) or q.Nack(ctx, it, err) }
//	// the client that enqueued:
//	result, err := q.Wait(ctx, id)
//
// # Life of an item
//
// [Queue.Enqueue] stores the payload and appends the id to the pending
// list. [Queue.EnqueueWith] adds one item with [EnqueueOptions]: a delay
// (the item waits among the delayed ones until a claim finds it due), an
// attempt limit of its own in place of [Config.MaxAttempts], and
// a unique key: while an item enqueued with the key is pending, delayed
// or leased, and for at most the key's lifetime, another enqueue with it
// adds nothing and returns the first's id. [Queue.Claim] moves ids from
// the head of that list into leases, each with a deadline (Redis time +
// [Config.Lease]) and a claim token.
// [Queue.Ack] stores the result (kept for [Config.ResultRetention]) and
// forgets the item; [Queue.Nack] delays it for a retry with exponential
// backoff and jitter, or dead-letters it, with the cause, at its last
// attempt ([Config.MaxAttempts]). [Queue.Settle] does both for a whole
// batch in one round trip. [Queue.Release] hands claimed items back
// unstarted, without counting the attempt. [Queue.Wait] blocks until an
// item's result exists.
//
// [EnqueueOptions].Priority puts an item in the lane of a priority, which
// [Queue.SetPriorities] gives a weight: claims draw from the lanes by a
// smooth weighted round robin whose state is in Redis, so each lane gets
// its weight's share fleet-wide while all have items, and none starves.
// Package tasks adds limits per task type
// ([github.com/worksteal/worksteal/tasks.Task.SetLimit]), which claims
// enforce: an item of a type at its limit is set aside, uncounted, until
// a place frees ([Depth].Parked).
//
// [Queue.Cancel] ends an item for good, wherever it is (see
// Cancellation below).
//
// Chains of items (each enqueued by the ack of the one before, in the
// same script call) and fan-outs (children, and a final item that the
// last child's ack enqueues, once) live in the same keys and scripts;
// package tasks is their API
// ([github.com/worksteal/worksteal/tasks.EnqueueChain],
// [github.com/worksteal/worksteal/tasks.EnqueueFanOut]). A plain queue
// never meets them.
//
// # Cancellation
//
// An item ends in exactly one terminal state: acked (its result kept),
// dead (in the dead letters, until retried or purged) or canceled.
// [Queue.Cancel] cancels a pending, delayed or leased item in one script
// call: its value, lease, delay and place in its type's limit go, its
// unique key is free, its waiters get [ErrCanceled] at once, and a
// canceled record stays for [Config.ResultRetention] (Wait reads it). A
// pending item's id stays in its list as a tombstone, so that a cancel
// costs O(1) whatever the backlog: the claim that meets it drops it (and
// says More if it leased fewer than asked), and [Queue.Depth] counts it
// as pending until then. Of a leased item, the
// worker's Ack or Nack then changes nothing and returns [ErrCanceled]
// ([SettleResult].Canceled counts it), and a [github.com/worksteal/worksteal/jobs.Drain] running it ends
// its handler's context (package jobs states the bound).
//
// Cancel, Claim and Settle are scripts, which Redis runs one at a time,
// so under any race the first to land wins: a cancel before the claim
// means no claim ever sees the item; a cancel before the ack drops the
// ack; an ack (or a dead-lettering) before the cancel makes it change
// nothing and return [ErrFinished]. Two cancels cancel once; the second
// returns nil too.
//
// # Maintenance
//
// A queue maintains itself as it is worked: [Queue.Claim], before it
// claims n items, and in the same script call, moves up to n delayed items
// whose time has come (retries, delayed enqueues) to the tail of the
// pending list, and hands up to n expired leases (crashed or stuck
// workers) back to it, or to the dead letters at their last attempt; what
// they bring back can be claimed by the same call. Bounded by n, a
// claim's work grows with what its caller asked for and never brings back
// more than one claim can take; [Queue.ClaimDetailed] reports More when
// either step reached n, so that a worker claims again soon. With nothing
// due or expired, it costs three reads in the script and no round trip;
// priorities and limits cost nothing there (whether the queue has any
// rides on the EXISTS calls the claim makes anyway).
//
// For a queue that nobody claims from for a while (its own workers
// stopped, or claim rarely) whose retries, delayed items or expired
// leases should still move, or be seen in [Queue.Depth] as pending rather
// than due or expired, the jobs
// [github.com/worksteal/worksteal/jobs.PromoteDue] and
// [github.com/worksteal/worksteal/jobs.TidyStale] do the same two steps
// on their own, in bounded batches, in a recruiter's slices (or once,
// through the job's Run). [Queue.Depth] shows what is waiting.
//
// An operator's acts are in package
// [github.com/worksteal/worksteal/inspect], which the CLI and the
// dashboard run on: dead letters listed with their causes
// ([github.com/worksteal/worksteal/inspect.Inspector.Items]), retried or
// purged by id or the oldest up to a count
// ([github.com/worksteal/worksteal/inspect.Inspector.RetryDead],
// RetryAllDead, PurgeDead, PurgeAllDead), delayed items run now by id
// (RunDelayed).
//
// # Guarantees
//
// Delivery is at least once: an item is in exactly one of pending, leased,
// delayed or dead until it is acked or canceled, and every move between them is one
// Lua script, so a crash between two Redis calls loses nothing; and since
// Redis does not roll back a script that fails half-way (a key of the wrong
// type), each script adds an item to its new place before it takes it from
// the old one. A worker
// that outlives its lease may still be working when another worker claims
// the item again; its Ack, Nack, Extend or Release is then refused with
// [ErrLeaseLost] and changes nothing, since the claim token is no longer
// the item's. Handlers must therefore be idempotent, as with any
// at-least-once queue.
//
// A type's limit holds fleet-wide for the leases that the claims hand
// out: Running counts an item from its claim to its settle, release or
// lease expiry; Rate counts claims in a sliding window of Per by Redis's
// clock, a released item's claim given back. A worker that outlives its
// lease is no longer counted.
//
// Malformed data found in Redis (a pending id without a payload, an id
// pending twice) is dead-lettered with a cause or dropped by Claim, never
// an error that stops the queue.
//
// # Redis layout and cost
//
// Every key of queue NAME starts with the hash tag {PREFIX:q:NAME}, so all
// scripts of one queue run on one Redis Cluster slot:
//
//	…:pending   list of ids (enqueue left, claim right)
//	…:leases    zset id → lease deadline (ms)
//	…:delayed   zset id → when the retry or the delayed item is due (ms)
//	…:dead      zset id → when it was dead-lettered (ms)
//	…:values    hash id → payload
//	…:attempts  hash id → claims so far; while leased, the claim token
//	            "attempt-number" (so one lookup gives both)
//	…:ready     hash id → when it last became pending (ms), unless that
//	            was its enqueue: an id starts with its making's ms
//	…:causes    hash id → why it last failed
//	…:waiting   hash id → 1 while a Wait may block on it
//	…:seq       counter of claims (one number per Claim call)
//	…:results   hash id → "expiry ms:token:result" of an acked item
//	…:expiring  list of "expiry ms:id" of the results, in expiry order
//	…:notify:ID list that wakes Wait, expires a minute after use
//	…:limits    hash id → the item's own max attempts, if it has one
//	…:unique:K  hash "id" → the item (or fan-out) holding unique key K;
//	            expires with K
//	…:chain:C   hash id, step, steps of chain C's current item (package
//	            tasks' chains); expires ResultRetention after its last move
//	…:join:J    hash left, total of fan-out J (package tasks): its
//	            children are J.1 … J.total, its final item J; expires
//	            ResultRetention after its last child's ack
//	…:weights   hash priority → weight (SetPriorities)
//	…:lanes     hash id → priority, of the items not in the default lane
//	…:snoozes   hash id → times the item snoozed (package tasks' Snooze);
//	            expires a week after its last snooze is due
//	…:pending:P list of the ids of priority P, as pending (which is the
//	            default lane)
//	…:swrr      hash priority → its credit in the claims' round robin
//	…:typelimits      hash task type → "running rate per-ms"
//	…:holding         hash id → task type, of leased items of limited types
//	…:running:T       zset id → lease deadline (ms), type T's leases
//	…:starts:T        zset "id:token" → claim time (ms), type T's claims
//	                  in its last Per; expires Per after the last
//	…:parked          set of the task types with items set aside
//	…:parked:T        list of type T's ids set aside, the oldest at the
//	                  right (Depth counts them as pending)
//	…:canceled        zset id → until when its canceled record is kept
//	                  (ms); the key expires with its last
//	…:tombstones      set of canceled ids still in pending's or a parked
//	                  list, until a claim meets them
//	…:trace:ID        hash "tp" → the trace context (W3C traceparent) of
//	                  item ID's enqueue (package tasks), which claims return as
//	                  Item.Trace, and for a join's final item "links" →
//	                  its children's runs' contexts; deleted with its ack,
//	                  cancel or purge, and expiring 7 days past its due
//	                  time (or the last child's run) in any case
//	…:traced          exists while any item may have a trace context,
//	                  outliving them all: a queue never traced looks none up
//
// A unique key's lock is not deleted when its item is acked, dead-lettered
// or purged: the next enqueue with the key finds its holder gone (no
// value) or dead, and takes the lock over; until then it costs one small
// key, for at most its lifetime.
//
// A result is readable until its expiry, by Redis's clock. Each Settle
// then drops up to two expired results per outcome it is given,
// jobs.TidyStale up to its batch and Claim up to its n, so results cannot pile up while the queue is in use; the
// results and expiring keys themselves expire after the last result in
// them, so an idle queue keeps none either. (One hash rather than a key
// per result: one bulk HSET per batch instead of a SET per item, which was
// the largest single cost of an Ack.) Processes that disagree on
// ResultRetention are safe: the keys live as long as the longest, and a
// short-lived result behind a longer one in expiring is dropped when that
// one is, unreadable meanwhile.
//
// Values, ready, attempts and results hold the field "", and leases a
// member scored +inf, whose text ("worksteal: this entry keeps the key in
// Redis's hashtable encoding …") is longer than 64 bytes: that keeps each
// of them in Redis's hash table or skiplist encoding for good.
// Small hashes and sorted sets are otherwise listpacks, whose every lookup
// scans the key: a batch of 100 going in and out of one costs quadratic
// time, which was about half the Redis time of a claim and its settle.
// No id can be "", and no lease reaches +inf; Depth leaves the pin out.
//
// Times come from Redis's TIME, never from the callers' clocks. Every
// operation costs O(k log n) for its k items in a queue of n: no call scans
// a whole list or set. Inside the scripts, per item, Lua makes no number
// into a string (its tostring is slower than most Redis commands here) and
// every structure is read and written with one bulk command per batch.
// Ids are 128 bits made by the caller's process, not by a Redis counter,
// so an Enqueue script call that the client resends after a lost reply
// adds nothing twice: the time in ms (48 bits), which is a fresh item's
// ready time, so that an enqueue writes none, and 80 random bits. Requires Redis 6.2 or later (BLMOVE); the
// scripts also run on miniredis, for the example service.
package queue
