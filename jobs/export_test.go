package jobs

import (
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// What this package's tests need of its internals.

// SetDepthClock makes job, a QueueDepth job, read the time from now.
func SetDepthClock(job recruiter.Job, now func() time.Time) { job.(*depthJob).now = now }
