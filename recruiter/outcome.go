package recruiter

import "github.com/worksteal/worksteal/telemetry"

// Outcome is how a recruitment ended; its text is the span's and the
// metrics' [telemetry.AttrOutcome].
type Outcome string

// The outcomes of a recruitment. Their texts are declared once, as
// package telemetry's names of the same name (the leaf that dashboards
// and queries use); these give them the type of [Recruitment.Outcome].
const (
	OutcomeRan             Outcome = telemetry.OutcomeRan             // the slice ran and returned without error
	OutcomeSkippedLocked   Outcome = telemetry.OutcomeSkippedLocked   // another node holds the job's lock
	OutcomeSkippedCooldown Outcome = telemetry.OutcomeSkippedCooldown // the job ran within its Every, somewhere
	OutcomeSkippedPaused   Outcome = telemetry.OutcomeSkippedPaused   // an operator paused the job, fleet-wide
	OutcomeError           Outcome = telemetry.OutcomeError           // the slice (or the lock) returned an error
	OutcomeTimeout         Outcome = telemetry.OutcomeTimeout         // the slice ran past its budget
	OutcomePanic           Outcome = telemetry.OutcomePanic           // the slice panicked; recovered
	OutcomeHung            Outcome = telemetry.OutcomeHung            // the slice outlived twice its lock's TTL: slot freed, job held until it returns
)
