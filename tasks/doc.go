// Package tasks runs typed tasks on a [queue.Queue]: handlers registered by
// task type, a job that the web servers' slices drain the queue with, and
// calls that enqueue a task and wait for its typed result, chains and
// fan-outs.
//
//	var resize = tasks.Define[ResizeArgs, Thumb]("resize")        // the type, its arguments and result
//	mux := tasks.NewMux()
//	err := resize.Handle(mux, func(ctx context.Context, a ResizeArgs) (Thumb, error) { ... })
//	job, err := mux.Job(q, jobs.DrainConfig{})
//	err = rec.Register(job, recruiter.JobConfig{Every: time.Second}) // paced by the recruiter
//	// elsewhere, a client:
//	c, err := tasks.NewClient(q)
//	id, err := resize.Enqueue(ctx, c, ResizeArgs{...})           // fire and forget
//	thumb, err := resize.Call(ctx, c, args)                      // enqueue and wait: a Thumb
//	ids, err := resize.EnqueueMany(ctx, c, []ResizeArgs{...})    // up to 1,000 in one round trip
//	id, err = tasks.EnqueueChain(ctx, c, []tasks.Step{resize.Step(args), upload.Pipe()})
//	url, err := tasks.WaitChain[string](ctx, c, id)             // the last step's result
//	id, err = tasks.EnqueueFanOut(ctx, c, children, zip.Step(dir))
//	zip, err := tasks.WaitFanOut[string](ctx, c, id)            // the final step's result
//	id, err = resize.Enqueue(ctx, c, args,                       // with options
//		tasks.Delay(time.Minute), tasks.Attempts(10), tasks.Unique("cat.png", time.Hour))
//	err = resize.SetLimit(ctx, c, tasks.Limit{Running: 2, Rate: 10, Per: time.Second}) // fleet-wide
//	err = q.SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1})
//	id, err = resize.Enqueue(ctx, c, args, tasks.Priority("critical"))
//	err = tasks.Cancel(ctx, c, id)                                // a task, a chain or a fan-out
//
// # Task types
//
// A [Task] is a task type (a name of [A-Za-z0-9._-]) with its argument
// type A and its result type R, made by [Define] and shared by the code
// that handles the task and the code that enqueues it: a handler, an
// enqueue or a call that disagrees with it on A or R does not compile.
// Its methods are the one way to each task operation: [Task.Handle],
// [Task.Enqueue], [Task.EnqueueMany], [Task.Call], [Task.Step] and
// [Task.Pipe] (a chain's or a fan-out's steps), [Task.Periodic] and
// [Task.SetLimit]. A chain's and a fan-out's results ([WaitChain],
// [ChildResults], [PreviousResult]) are typed by the caller, as their
// steps may be of any types.
//
// Types known only at run time have a small surface of their own.
// [Raw](typ) is a Task over bytes already in the codec's encoding, which
// pass the codec by: a proxy enqueues a request's body as it is, and a
// Raw handler gets a task's arguments, and returns its result, as bytes.
// [Mux.HandleUnknown] serves the types that no handler has, a family of
// types or all of them, with the task's type and bytes. Both meet the
// tasks of [Define]d Tasks of the same codec. The string forms of the
// Task methods ([Handle], [Enqueue], [Call], ...) are deprecated
// wrappers, kept for one release.
//
// # Handlers and the job
//
// A [Mux] maps task types (names of [A-Za-z0-9._-]) to handlers, which
// [Task.Handle] registers with their argument and result types. [Mux.Job]
// is a [jobs.Drain] of the queue, named "tasks.QUEUE", that dispatches
// each item to the handler of its type: everything Drain promises holds
// (batches, budgets, leases, one round trip to settle a batch, a panic
// failing its item alone). Like any Drain it maintains its queue, in the
// claims it makes anyway: failed tasks are retried after the queue's
// backoff, delayed ones run when due, and a crashed worker's tasks come
// back when their lease ends (at their last attempt, dead), with no other
// job registered. A task whose type no handler has (and
// [Mux.HandleUnknown] does not serve), or whose envelope or arguments do
// not decode, fails like a handler error, with a cause wrapping
// [ErrUnknownType] or [ErrDecode]: the queue retries it up to its
// MaxAttempts and then dead-letters it with that cause, and the job goes
// on with the other items. Nothing a queue holds can make the job panic or
// stop the queue. Register handlers before the job first runs, so that
// early tasks do not spend their attempts as unknown types.
//
// # Dedicated workers
//
// [Mux.Serve] runs the same Mux on the same queue in a process of its
// own, as a dedicated worker: it claims and runs tasks back to back,
// [WorkerConfig].Concurrency at once, with no budget and no pacing, beside
// web processes that steal time on the queue; limits, priorities,
// cancellation, middleware, timeouts and spans hold across both kinds of
// process. It maintains the queue as Mux.Job does, so a worker registers
// no Mux.Job of its queue. On its context's end (SIGTERM) it claims
// nothing more, hands back what it had claimed and not started, and lets
// the started handlers finish up to the ShutdownTimeout or Abort; then
// their contexts end with [ErrWorkerStopped] and their tasks go back,
// their attempts unused:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	err := mux.Serve(ctx, q, tasks.WorkerConfig{Concurrency: 32, ShutdownTimeout: 20 * time.Second})
//
// When to prefer workers to stolen time, the graceful shutdown under an
// orchestrator, and a scaling rule on the queue's depth:
// docs/operations.md, "Dedicated workers".
//
// # Inside a handler
//
// A handler's context is its task: [InfoFrom] returns its id, type,
// queue, priority, attempt and limit, enqueue time and place in a chain,
// read from what the claim and the envelope carried, with no Redis call
// and no allocation (the Mux keeps them in the one context it makes for
// a task anyway; the enqueue time is in the id). A periodic task's tick
// is not carried: the claim does not read the unique key that holds it,
// and a round trip per task would cost more than it is worth.
//
// [Timeout] bounds a type's attempts: the handler's context ends at it,
// with [ErrTimeout] as its cause, and the attempt fails with an error
// wrapping it. A timeout is at most its queue's Lease, refused where the
// two meet ([Task.Handle], [Mux.Job]) rather than the lease extended:
// the lease is what brings a crashed worker's tasks back, and a longer
// one is the queue's setting. A handler that ignores its context keeps
// its place until it returns, counted in [TypeStats].Overdue.
//
// [Mux.Use] adds [Middleware] around every handler, the first added
// outermost, each a function of a [Handler] that sees the task's type,
// its encoded arguments and result, and its Info in the context. The
// Mux's own work has the same form: innermost, a type's timeout and the
// recovery of panics, so that a middleware sees a panic or a timeout as
// the attempt's error; outermost, the log of failures, which sees the
// attempt's outcome once every middleware returned. The chains are built
// when middleware or handlers are added, not per task.
//
// Failures are logged by the Mux ([WithLogger]; by default the
// recruiter's Config.Logger, which a slice's context carries, see
// [recruiter.Logger]): a retried attempt at DEBUG, since the queue
// handles it and the counters count it, a panic at ERROR with its stack,
// a dead letter at ERROR, each with task_type, task_id, queue, attempt,
// max_attempts and error; at most 10 lines of each kind per second, then
// one that counts those left out. [WithDeadLetterHook] calls a function
// once per dead letter, for error trackers. The queue's scripts make dead
// letters too, where no handler failed (a lease that expired at its last
// attempt, a pending id without a value): the claim or [jobs.TidyStale]
// that made one hands it back to its process, whose Mux logs it at ERROR
// and runs its hook. A handler that fails after its lease ended is logged
// at INFO only, since the queue throws its outcome away. A hook that had
// not run when its process died is lost.
//
// # Steering the retry
//
// By default a handler's error is retried after the queue's backoff until
// the task's attempts run out. A handler may say otherwise by returning
// (or wrapping, with %w) one of these errors:
//
//   - [DeadLetter](cause): dead-lettered now, no further attempt; a chain
//     stops at the step, a fan-out fails at once (the final step never
//     runs); the dead letter's cause is the handler's whole error text.
//   - [RetryAfter](d, cause): run again after d instead of the backoff;
//     the attempt is used, so the last one dead-letters as any error.
//   - [Snooze](d): run again after d with the attempt not used (its next
//     run has the same attempt number, and a last attempt is not
//     dead-lettered); a chain or fan-out waits for the step. A task snoozes
//     at most 100 times in its life, counted with it in the queue (the
//     hash …:snoozes); each snooze past them is a failed attempt whose
//     cause says so, so that a task cannot snooze for ever.
//
// [RetryDelay], a [HandleOption], sets a type's delay as a function of the
// attempt and the error, used when the error says none of the above. A
// negative delay is 0 and one past a year is a year, whichever way it is
// given. The queue reads these errors where it settles an item, so they
// steer a [jobs.Drain] handler's error, or a [queue.Queue.Nack] cause, the
// same way; RetryDelay is a Mux's only, and applies to a panic or a
// timeout as to any error of the handler.
//
// # Clients
//
// A [Client] is a queue and a codec. Enqueues and calls take the Client
// rather than being its methods, since methods cannot have type
// parameters; a process that only submits tasks needs no Mux, and one
// that only runs them needs no Client. [Task.Call] waits with
// [queue.Queue.Wait]: a task that dies returns an error wrapping
// [queue.ErrDead] with the cause, as text. [Task.EnqueueMany] adds many
// tasks of a type in one script call per 1,000.
//
// The same input fails every way of adding a task with an error wrapping
// the same sentinel, and adds nothing: a nil Client, an invalid type,
// arguments that the codec cannot encode or an option out of its bounds
// [ErrInvalidArgument], a task above the queue's MaxPayload
// [queue.ErrPayloadTooLarge].
//
// # Enqueue options
//
// Enqueues and calls take [EnqueueOption]s, which map to the queue's
// [queue.EnqueueOptions]; with or without them, an enqueue is one script
// call, one round trip. [Delay] makes a task due later: it waits among
// the queue's delayed items until a claim of the job finds it due.
// [Attempts] gives a task its own number of attempts in place of the
// queue's MaxAttempts. [Unique] gives it a key, per task type: while a task of
// that type enqueued with that key is pending, delayed or running, and
// for at most the key's lifetime, another enqueue with it adds nothing
// and returns the first task's id, atomically across processes and on a
// Redis Cluster; a Call then waits for the first task's result. The key
// is freed when that task succeeds, dies or is purged. Options out of
// their bounds fail the enqueue with [ErrInvalidArgument] and add
// nothing. [Task.EnqueueMany] gives each of its tasks the Delay and the
// Attempts, and refuses Unique (a key stands for one task);
// [Task.Periodic] refuses Unique too, as each tick's task has a key of its own.
//
// # Limits per type
//
// [Task.SetLimit] bounds a task type for the whole
// fleet: at most Running of its tasks running at once, and at most Rate
// starting in any window of Per, a sliding window by Redis's clock (an
// upstream's quota). The limits live in Redis with the queue, so every
// process, whatever registered it, and the CLI see the same ones
// ([Client.Limits]); the queue enforces them in the script call that
// claims, reading each task's type from its envelope. A task over its
// type's limit is set aside with no attempt used ([queue.Depth]'s
// Parked counts it, within Pending); the tasks of other types behind it
// are claimed as usual, so a limited type never holds the others back;
// and it comes back, before its type's newer tasks, once a place frees:
// when a task of its type is settled or handed back, or its lease
// expires, so a crashed worker's place comes back with its lease. A
// claim looks at up to four times its batch of entries, and says More
// when it stopped at that bound. A task starts when it is claimed: a
// [jobs.Drain] batch of 100 may hold a limited type's tasks while it runs
// the ones before them, so a rate-limited type is best drained in small
// batches. A queue without limits pays nothing for them (its claim runs
// the same commands); the cost with them is in BENCHMARKS.md.
//
// # Priorities
//
// [Priority] puts a task in a lane of its queue, which
// [queue.Queue.SetPriorities] gives a weight. The queue's one job drains
// every lane: each claim takes from the lanes by a smooth weighted round
// robin kept in Redis, so while every lane has tasks each gets its
// weight's share of the claims, fleet-wide, and among any sum-of-weights
// consecutive claims the lightest lane has its own: never starved. A task
// keeps its priority through retries, releases and expired leases, and a
// chain's next steps inherit it; a fan-out waits in the default lane.
// Limits and priorities combine: a task set aside by its type's limit
// comes back before any lane's.
//
// # Chains
//
// [EnqueueChain] adds a chain of tasks, A → B → C, each a [Step]; its id
// is its first task's. The job enqueues each next step in the same
// script call that acks the step before it (one round trip per batch
// still), so a worker killed between a claim and its ack loses nothing
// (the lease expires, the next claim hands the step back), and a
// step that succeeded never runs again. A step's handler reads the
// previous step's result with [PreviousResult], or gets it as its
// arguments when the step is a [Task.Pipe]. A step that dies stops the chain:
// [WaitChain] (and [CallChain], which enqueues and waits) returns an
// error wrapping [queue.ErrDead] with its cause; requeued, the chain
// runs on. [ChainStatus] reads the chain's progress in one call: its
// step of how many, that step's id, running, done or failed. The enqueue
// options apply to the whole chain: [Delay] to its first step, [Attempts]
// to every step, and [Unique] holds its key until the chain ends.
//
// # Fan-out
//
// [EnqueueFanOut] adds children, tasks that run as any do, and a final
// step, in one script call; its id is the final step's task id. Each
// child's success counts the fan-out down in the script call that acks
// it, and the one that ends it enqueues the final step there: it runs
// once, after every child succeeded, however many workers ack them at
// once, and a resent or stale ack counts nothing. Its handler reads the
// children's results, in order, with [ChildResults]. A child that dies
// fails the fan-out, as an error in a [Task.Call] of it would: the final step
// does not run, and [WaitFanOut] (and [CallFanOut]) returns an error
// wrapping [queue.ErrDead] with the child's cause; requeued, the child
// lets the fan-out run on. [FanOutStatus] reads its progress: children
// done and dead, running, done or failed. A handler may fan out: the
// fan-out is named after its task, so a retried handler adds it once.
// The enqueue options apply to the whole fan-out: [Delay] to its
// children, [Attempts] to every child and the final step, and [Unique]
// (per the final step's type) holds its key until the final step
// succeeds or dies; a fan-out failed by a dead child holds it for its
// ttl. Tasks that need no final step are plain tasks: [Task.EnqueueMany] adds
// them in one call, and each runs at a plain task's cost, where a child
// also counts its fan-out down.
//
// # Cancellation
//
// [Cancel] ends a task for good, in one script call, from any process: a
// pending or delayed task (or one waiting for a retry) never runs, nor
// does one that a drain has claimed but not started (Cancel of a claimed
// or running task returns 150 ms after its script, the time a drain may
// still start a claimed task on a read that did not see the cancel: see
// package jobs); a running one's handler context ends with
// [queue.ErrCanceled] as its cause ([context.Cause]) within a poll of 100
// ms and a round trip, whichever process runs it (a drain polls which of
// its running tasks are canceled, one read per batch per 100 ms: see
// package jobs; the measured p50 and p99 are in BENCHMARKS.md), and what
// it returns then is dropped: never retried, never dead-lettered. Its
// waiters ([Task.Call], [WaitChain], [WaitFanOut], [queue.Queue.Wait]) return
// an error wrapping queue.ErrCanceled at once, and its [Unique] key is
// free. A chain's id cancels its current step, so no later step runs; a
// fan-out's id, or a child's, cancels its unfinished children and its
// final step, which never runs; [ChainStatus] and [FanOutStatus] read
// [StateCanceled].
//
// A task ends in exactly one of done, dead and canceled. A cancel and an
// ack (or a death) of the same task are ordered by Redis, and the first
// to land wins: a cancel after it returns an error wrapping
// [queue.ErrFinished] and changes nothing; an ack after the cancel is
// dropped. A handler that must not be cut short mid-way checks nothing
// special: it sees its context end, as at its lease's end.
//
// # Encoding
//
// A task is one queue item whose payload is an envelope: a version byte,
// the task type, the codec's name, then the arguments as the codec encodes
// them. The result is the codec's encoding of the handler's return value.
// The codec is JSON (encoding/json) unless [WithCodec] sets another; a
// Mux refuses tasks encoded with a codec of another name, with
// [ErrDecode]. An envelope of an unknown version is refused the same way,
// so later versions can add fields: a chain's step is version 2, which
// carries the chain's place, the previous result and the steps to come.
//
// # Traces
//
// Each enqueue is a PRODUCER span and each run a CONSUMER span, a child
// of the recruitment whose slice ran it, linked to the enqueue (a
// chain's next step: to the run of the step before), with the tracer of
// [WithTracerProvider]; the enqueue's span context is stored beside the
// task, outside its envelope. docs/telemetry.md lists the spans and
// their attributes.
//
// # Not yet
//
// A fan-out's children cannot be chains, nor the final step a [Task.Pipe].
// [Task.Enqueue], [EnqueueChain] and [EnqueueFanOut] do not say whether a
// unique enqueue was a duplicate; [queue.Queue.EnqueueWith] does, for an
// item of one's own. A fan-out's final step links to the fan-out's
// enqueue, not to its children's runs.
package tasks
