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

// Attribute keys of the recruitment span and of the metrics.
const (
	AttrJob     attribute.Key = "worksteal.job"     // the job's name
	AttrRate    attribute.Key = "worksteal.rate"    // the job's share of enlistments when drawn: its Rate, or what automatic pace set
	AttrOutcome attribute.Key = "worksteal.outcome" // an [Outcome]
	AttrItems   attribute.Key = "worksteal.items"   // Report.Items of the slice
	AttrMore    attribute.Key = "worksteal.more"    // Report.More of the slice

	AttrEvictionPolicy attribute.Key = "worksteal.redis.maxmemory_policy" // the Redis server's maxmemory-policy

	AttrTaskType    attribute.Key = "worksteal.task.type"    // a task's type (package tasks)
	AttrTaskOutcome attribute.Key = "worksteal.task.outcome" // a task attempt's outcome: TaskDone, TaskRetried or TaskDead
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
