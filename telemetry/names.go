package telemetry

import "go.opentelemetry.io/otel/attribute"

const (
	// ScopeName names worksteal's tracer and meter.
	ScopeName = "github.com/worksteal/worksteal"
	// Version is the instrumentation version reported with ScopeName.
	Version = "0.1.0"
)

// SpanRecruit is the name of the span of one recruitment.
const SpanRecruit = "worksteal.recruit"

// The operations of a task's spans (package tasks), after OpenTelemetry's
// messaging conventions: a span's name is its operation, a space and the
// queue's name ("send emails"), and its attribute messaging.operation.name
// is the operation alone.
const (
	// SpanTaskSend is the operation of the PRODUCER span of an enqueue
	// (Task.Enqueue, EnqueueMany, Call, a chain, a fan-out, a periodic
	// tick), whose span context the task carries to its runs.
	SpanTaskSend = "send"
	// SpanTaskProcess is the operation of the CONSUMER span of one run of
	// a task, a child of the recruitment whose slice ran it, linked to
	// its enqueue's span (or, for a chain's next step, to the run of the
	// step before).
	SpanTaskProcess = "process"
	// MessagingSystem is the value of the attribute messaging.system of
	// the task spans.
	MessagingSystem = "worksteal"
)

// SpanAction is the name of the span of one operator's action on the
// dashboard (package dashboard).
const SpanAction = "worksteal.action"

// Attribute keys of the recruitment span and of the metrics.
const (
	AttrJob     attribute.Key = "worksteal.job"     // the job's name
	AttrRate    attribute.Key = "worksteal.rate"    // the job's share of enlistments when drawn: its Rate, or what automatic pace set
	AttrOutcome attribute.Key = "worksteal.outcome" // an [Outcome]
	AttrItems   attribute.Key = "worksteal.items"   // Report.Items of the slice
	AttrMore    attribute.Key = "worksteal.more"    // Report.More of the slice

	AttrEvictionPolicy attribute.Key = "worksteal.redis.maxmemory_policy" // the Redis server's maxmemory-policy

	AttrQueue      attribute.Key = "worksteal.queue"       // a queue's name
	AttrQueueState attribute.Key = "worksteal.queue.state" // a [QueueState] of the queue's items

	AttrTaskType    attribute.Key = "worksteal.task.type"    // a task's type (package tasks)
	AttrTaskOutcome attribute.Key = "worksteal.task.outcome" // a task attempt's outcome: TaskDone, TaskRetried or TaskDead
	AttrTaskAttempt attribute.Key = "worksteal.task.attempt" // which attempt a task's run is, 1 on the first (its process span)
	AttrChainStep   attribute.Key = "worksteal.chain.step"   // a chain's step that a task is, 1 on the first (its spans)

	AttrAction      attribute.Key = "worksteal.action"       // an operator's action: pause, resume, retry, purge, run, cancel, …
	AttrActor       attribute.Key = "worksteal.actor"        // who acted, as the host's function names them
	AttrActionIDs   attribute.Key = "worksteal.action.ids"   // how many item ids the action named
	AttrActionCount attribute.Key = "worksteal.action.count" // how many items it moved or deleted
)

// Metric names.
const (
	MetricRecruitments  = "worksteal.recruitments"
	MetricSliceDuration = "worksteal.slice.duration"
	MetricItems         = "worksteal.items"
	// MetricJobRate is a gauge, by job: its share of enlistments now (its
	// Rate, or what automatic pace set).
	MetricJobRate = "worksteal.job.rate"
	// MetricJobPaused is a gauge, by job: 1 while the job is paused
	// fleet-wide, as this process last learnt, else 0.
	MetricJobPaused = "worksteal.job.paused"
	// MetricJobLastSuccess is a gauge, by job: the time of the job's last
	// slice that ran without error in this process, in unix seconds;
	// absent until one has. "Not run for three intervals" is one
	// expression over it.
	MetricJobLastSuccess = "worksteal.job.last_success"
	// MetricJobNextTick is a gauge, by job: a scheduled job's next tick as
	// this process plans to visit it, in unix seconds.
	MetricJobNextTick = "worksteal.job.next_tick"
	// MetricJobInterval is a gauge, by job: its Every in seconds; absent
	// for a job without Every (a fixed Rate alone, or a Schedule). "Not
	// run for three intervals" compares [MetricJobLastSuccess] with it.
	MetricJobInterval = "worksteal.job.interval"
	// MetricJobRegistered is a gauge, by job: when this process registered
	// the job, in unix seconds: where "not run for three intervals" counts
	// from in a fleet where no process has run the job yet.
	MetricJobRegistered = "worksteal.job.registered"
	// MetricJobFleet is a gauge, by job: the number of processes visiting
	// the job as this process last learnt it (automatic pace and
	// schedules); absent until learnt.
	MetricJobFleet = "worksteal.job.fleet"
	// MetricPressured is a counter, by job: the slices that the pressure
	// gate held back because this process was busy (recruiter
	// Config.Pressure); the job is drawn again later.
	MetricPressured = "worksteal.pressured"
	// MetricBreakerOpen is a gauge: 1 while this process's circuit
	// breaker keeps recruitment away from Redis, else 0.
	MetricBreakerOpen = "worksteal.breaker.open"
	// MetricQueueDepth is a gauge, by queue ([AttrQueue]) and state
	// ([AttrQueueState]): the items a queue holds in each state, as a
	// depth job read them (package jobs, QueueDepth). One process reports
	// a reading, for a short while after it made it: aggregate with max
	// by queue and state, never sum.
	MetricQueueDepth = "worksteal.queue.depth"
	// MetricQueueOldestPending is a gauge, by queue: how long the item
	// next in line had waited since it last became pending, in seconds,
	// when a depth job read it; 0 when nothing is pending. Aggregate with
	// max by queue.
	MetricQueueOldestPending = "worksteal.queue.oldest_pending"
	// MetricRedisEvictionRisk is a gauge, by maxmemory-policy (attribute
	// [AttrEvictionPolicy]): 1 when the Redis server's policy may evict
	// worksteal's keys (any but noeviction), else 0; absent until the
	// recruiter has read it.
	MetricRedisEvictionRisk = "worksteal.redis.eviction_risk"
	// MetricTaskAttempts is a counter, by task type and outcome: the
	// attempts a tasks Mux ran in this process.
	MetricTaskAttempts = "worksteal.task.attempts"
	// MetricTaskRunning is an up-down counter, by task type: the attempts
	// in their handler in this process now.
	MetricTaskRunning = "worksteal.task.running"
)

// The states of a queue's items in [MetricQueueDepth]: the values of
// [AttrQueueState]. Expired items are among the leased ones and due items
// among the delayed: add pending, leased, delayed and dead for the whole,
// never expired or due.
const (
	QueuePending = "pending" // waiting to be claimed
	QueueLeased  = "leased"  // claimed, not yet settled
	QueueExpired = "expired" // leased past their deadline: the next claim hands them back
	QueueDelayed = "delayed" // waiting for a retry, or enqueued with a delay
	QueueDue     = "due"     // delayed whose time has come
	QueueDead    = "dead"    // dead letters
)

// The outcomes of a task attempt: the values of [AttrTaskOutcome].
const (
	TaskDone    = "done"    // the handler returned a result
	TaskRetried = "retried" // it failed before its last attempt: retried later
	TaskDead    = "dead"    // it failed at the last attempt: dead-lettered
)

// The outcomes of a recruitment: the values of [AttrOutcome].
const (
	OutcomeRan             = "ran"              // the slice ran and returned without error
	OutcomeSkippedLocked   = "skipped_locked"   // another node holds the job's lock
	OutcomeSkippedCooldown = "skipped_cooldown" // the job ran within its Every, somewhere
	OutcomeSkippedPaused   = "skipped_paused"   // an operator paused the job, fleet-wide
	OutcomeError           = "error"            // the slice (or the lock) returned an error
	OutcomeTimeout         = "timeout"          // the slice ran past its budget
	OutcomePanic           = "panic"            // the slice panicked; recovered
	OutcomeHung            = "hung"             // the slice outlived twice its lock's TTL: slot freed, job held until it returns
)
