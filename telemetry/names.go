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
	AttrRate    attribute.Key = "worksteal.rate"    // the job's configured rate
	AttrOutcome attribute.Key = "worksteal.outcome" // an [Outcome]
	AttrItems   attribute.Key = "worksteal.items"   // Report.Items of the slice
	AttrMore    attribute.Key = "worksteal.more"    // Report.More of the slice
)

// Metric names.
const (
	MetricRecruitments  = "worksteal.recruitments"
	MetricSliceDuration = "worksteal.slice.duration"
	MetricItems         = "worksteal.items"
)

// The outcomes of a recruitment: the values of [AttrOutcome].
const (
	OutcomeRan             = "ran"              // the slice ran and returned without error
	OutcomeSkippedLocked   = "skipped_locked"   // another node holds the job's lock
	OutcomeSkippedCooldown = "skipped_cooldown" // the job ran within its Every, somewhere
	OutcomeError           = "error"            // the slice (or the lock) returned an error
	OutcomeTimeout         = "timeout"          // the slice ran past its budget
	OutcomePanic           = "panic"            // the slice panicked; recovered
	OutcomeHung            = "hung"             // the slice outlived twice its lock's TTL: slot freed, job held until it returns
)
