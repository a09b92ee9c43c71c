// Package tasks runs typed tasks on a [queue.Queue]: handlers registered by
// task type, a job that the web servers' slices drain the queue with, and
// calls that enqueue a task and wait for its typed result, chains and
// fan-outs.
//
//	mux := tasks.NewMux()
//	err := tasks.Handle(mux, "resize", func(ctx context.Context, a ResizeArgs) (Thumb, error) { ... })
//	job, err := mux.Job(q, jobs.DrainConfig{})
//	err = rec.Register(job, recruiter.JobConfig{Every: time.Second}) // paced by the recruiter
//	// elsewhere, a client:
//	c, err := tasks.NewClient(q)
//	id, err := tasks.Enqueue(ctx, c, "resize", ResizeArgs{...})        // fire and forget
//	thumb, err := tasks.Call[ResizeArgs, Thumb](ctx, c, "resize", args) // enqueue and wait
//	id, err = tasks.EnqueueChain(ctx, c, []tasks.Step{{Type: "resize", Args: args}, tasks.Pipe("upload")})
//	url, err := tasks.WaitChain[string](ctx, c, id)                    // the last step's result
//	id, err = tasks.EnqueueFanOut(ctx, c, children, tasks.Step{Type: "zip", Args: dir})
//	zip, err := tasks.WaitFanOut[string](ctx, c, id)                   // the final step's result
//	id, err = tasks.Enqueue(ctx, c, "resize", args,                    // with options
//		tasks.Delay(time.Minute), tasks.Attempts(10), tasks.Unique("cat.png", time.Hour))
//
// # Handlers and the job
//
// A [Mux] maps task types (names of [A-Za-z0-9._-]) to handlers, which
// [Handle] registers with their argument and result types. [Mux.Job] is a
// [jobs.Drain] of the queue, named "tasks.QUEUE", that dispatches each item
// to the handler of its type: everything Drain promises holds (batches,
// budgets, leases, one round trip to settle a batch, a panic failing its
// item alone). Like any Drain it maintains its queue, in the claims it
// makes anyway: failed tasks are retried after the queue's backoff,
// delayed ones run when due, and a crashed worker's tasks come back when
// their lease ends (at their last attempt, dead), with no other job
// registered. A task whose type no handler has, or whose envelope or
// arguments do not decode, fails like a handler error, with a cause
// wrapping [ErrUnknownType] or [ErrDecode]: the queue retries it up to its
// MaxAttempts and then dead-letters it with that cause, and the job goes
// on with the other items. Nothing a queue holds can make the job panic or
// stop the queue. Register handlers before the job first runs, so that
// early tasks do not spend their attempts as unknown types.
//
// # Clients
//
// A [Client] is a queue and a codec. [Enqueue] and [Call] are functions
// taking the Client rather than methods, since methods cannot have type
// parameters; a process that only submits tasks needs no Mux, and one
// that only runs them needs no Client. [Call] waits with
// [queue.Queue.Wait]: a task that dies returns an error wrapping
// [queue.ErrDead] with the cause, as text.
//
// # Enqueue options
//
// [Enqueue] and [Call] take [EnqueueOption]s, which map to the queue's
// [queue.EnqueueOptions]; with or without them, an enqueue is one script
// call, one round trip. [Delay] makes a task due later: it waits among
// the queue's delayed items until a claim of the job finds it due.
// [Attempts]
// gives a task its own number of attempts in place of the queue's
// MaxAttempts. [Unique] gives it a key, per task type: while a task of
// that type enqueued with that key is pending, delayed or running, and
// for at most the key's lifetime, another enqueue with it adds nothing
// and returns the first task's id, atomically across processes and on a
// Redis Cluster; a Call then waits for the first task's result. The key
// is freed when that task succeeds, dies or is purged. Options out of
// their bounds fail the enqueue with [ErrInvalidArgument] and add
// nothing.
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
// arguments when the step is a [Pipe]. A step that dies stops the chain:
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
// fails the fan-out, as an error in a [Call] of it would: the final step
// does not run, and [WaitFanOut] (and [CallFanOut]) returns an error
// wrapping [queue.ErrDead] with the child's cause; requeued, the child
// lets the fan-out run on. [FanOutStatus] reads its progress: children
// done and dead, running, done or failed. A handler may fan out: the
// fan-out is named after its task, so a retried handler adds it once.
// The enqueue options apply to the whole fan-out: [Delay] to its
// children, [Attempts] to every child and the final step, and [Unique]
// (per the final step's type) holds its key until the final step
// succeeds or dies; a fan-out failed by a dead child holds it for its
// ttl.
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
// # Not yet
//
// A fan-out's children cannot be chains, nor the final step a [Pipe].
// [Enqueue], [EnqueueChain] and [EnqueueFanOut] do not say whether a
// unique enqueue was a duplicate; [queue.Queue.EnqueueWith] does, for an
// item of one's own.
package tasks
