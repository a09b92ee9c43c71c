package dashboard

import (
	"math"
	"strconv"
	"time"
)

// The words the page puts beside a job's numbers, so that a reader who
// has not read the recruiter's documentation is not misled by them: most
// draws of a paced job skip, an automatic job's share of the roll says
// nothing of how often it runs, and a quiet process runs slices nobody
// drew; a scheduled job's last run here is not the fleet's.

// explainRate fills the Rate cell: a fixed Rate as its share, automatic
// pace as the pace it aims at, fleet-wide, and the fleet it learnt.
func explainRate(jv *jobView, j DocumentJob) {
	if !j.Automatic {
		jv.Rate = fmtShare(j.Rate) // the column's title says what it is
		return
	}
	every := fmtMS(j.EveryMS)
	jv.Rate = "auto · ≈1 run / " + every
	jv.RateTitle = "paced by the recruiter: about one run per Every (" + every +
		") across all the processes that serve the job, however many they are and whatever their traffic. "
	if j.Fleet > 0 {
		jv.Fleet = "fleet-wide · " + fmtFleet(j.Fleet)
		jv.RateTitle += "This process learnt a fleet of " + fmtFleet(j.Fleet) + " from its visits to the job's lock. "
	} else {
		jv.Fleet = "fleet-wide · size: learning"
		jv.RateTitle += "This process has not learnt the fleet's size yet: its first visits to the job's lock tell it. "
	}
	jv.RateTitle += "The sparkline: the share of enlisting requests that draw the job (" + fmtShare(j.Rate) +
		" now) over the chart's window, which the pace sets."
}

// fmtFleet formats a fleet's size, an estimate: "≈1 process",
// "≈2.5 processes", "≈120 processes".
func fmtFleet(n float64) string {
	s := strconv.FormatFloat(math.Round(n), 'f', 0, 64)
	if n < 10 {
		s = trimFloat(n, 1)
	}
	if s == "1" {
		return "≈1 process"
	}
	return "≈" + s + " processes"
}

// explainDraws fills the pacer's cells: the attempts (draws, the pace
// timer's and the wakes' starts), and those held back, split by where.
// Held back here counts attempts, not draws: it may exceed Drawn.
func explainDraws(jv *jobView, j DocumentJob) {
	jv.Attempts = fmtCount(j.Attempts)
	jv.AttemptsSplit = fmtCount(j.Drawn) + " drawn"
	if j.Timed > 0 {
		jv.AttemptsSplit += " · " + fmtCount(j.Timed) + " timer"
	}
	if j.Woken > 0 {
		jv.AttemptsSplit += " · " + fmtCount(j.Woken) + " woken"
	}
	jv.AttemptsTitle = fmtCount(j.Drawn) + " drawn by requests' rolls, " + fmtCount(j.Timed) +
		" started by this process's pace timer because no request enlisted in time, " + fmtCount(j.Woken) +
		" woken by an enqueue here; the timer's and the wakes' have no draw, so Ran may exceed Drawn"
	sk := j.Skipped
	jv.Elsewhere = fmtCount(sk.Elsewhere)
	jv.ElsewhereTitle = "Redis answered that the fleet holds the job: locked " + fmtCount(sk.Locked) + " (another process held the job's lock) · cooldown " +
		fmtCount(sk.Cooldown) + " (the fleet ran it within its Every) · paused " + fmtCount(sk.Paused) + " (paused fleet-wide)"
	jv.Here = fmtCount(sk.Gate)
	jv.HereTitle = "attempts held back in this process before any Redis call: most often it already knew the job was held " +
		"(it ran here, or Redis said until when), else a slice of it running here, no free slot, the breaker open, shutting down, or the process busy; " +
		"it counts the timer's and the wakes' attempts too, so it may exceed Drawn, never Attempts"
	if sk.Pressured > 0 {
		jv.Busy = fmtCount(sk.Pressured) + " busy"
		jv.HereTitle += " (" + fmtCount(sk.Pressured) + " of them: the process was busy, its goroutines waiting for a CPU; the job is drawn again later)"
	}
	failed := j.Errors + j.Timeouts + j.Panics + j.Hung
	jv.Failed = failed > 0
	jv.FailedCount = fmtCount(failed)
	jv.FailedTitle = "errors " + fmtCount(j.Errors) + " (of the slice, or Redis failing its lock) · timeouts " + fmtCount(j.Timeouts) +
		" (past the budget) · panics " + fmtCount(j.Panics) + " · hung " + fmtCount(j.Hung) + " (outlived twice the lock's TTL)"
}

// stateLabels are the words of the page for the document's states.
var stateLabels = map[string]string{
	StateOnTime: "on time", StateLate: "late", StateFailing: "failing", StatePaused: "paused", StateHeldBack: "held back",
}

// explainState fills the state cell, and the next due cell of a job
// without a schedule (explainSchedule fills a scheduled job's).
func explainState(jv *jobView, j DocumentJob, now time.Time) {
	jv.State, jv.StateReason = j.State, j.StateReason
	jv.StateLabel = stateLabels[j.State]
	jv.ShowReason = j.State != StateOnTime && j.State != StatePaused // paused: the pill in the name says until when
	if j.Schedule != "" {
		return
	}
	switch {
	case j.NextDue == nil:
		jv.Next = "on traffic"
		jv.NextTitle = "no Every and no schedule: the job runs when requests exit fast and draw it; nothing is ever due"
	case !j.NextDue.After(now):
		jv.Next = "due " + fmtAgo(now.Sub(*j.NextDue))
		if jv.Next == "due just now" {
			jv.Next = "due now"
		}
		jv.NextTitle = "the last run seen (here, or in the fleet from Redis's answers) plus Every: " + j.NextDue.Local().Format(time.RFC3339) +
			"; late once 3 × Every pass without a run"
	default:
		jv.Next = "in <1s" // the page refreshes every 2 s: a fraction of a second is noise
		if left := j.NextDue.Sub(now); left >= time.Second {
			jv.Next = "in " + fmtLeft(left)
		}
		jv.NextTitle = "the last run seen (here, or in the fleet from Redis's answers) plus Every: " + j.NextDue.Local().Format(time.RFC3339)
	}
}

// explainSchedule fills a scheduled job's cells: its expression where a
// rate stands, the tick this process visits next (flagged when overdue),
// and how late its last run here began. Without a cron parser the page
// cannot tell the previous tick, nor whether another process ran it: it
// says what this process knows.
func explainSchedule(jv *jobView, j DocumentJob, now time.Time) {
	jv.Schedule = j.Schedule
	jv.RateTitle = "cron schedule: the job runs once per tick, fleet-wide, at any traffic, in whichever process takes the tick; " +
		"ticks are instants on Redis's clock."
	if j.Fleet > 0 {
		jv.RateTitle += " This process counted " + fmtFleet(j.Fleet) + " visiting its ticks."
	}
	switch {
	case j.NextTick == nil:
		jv.Next = "not planned"
		jv.NextTitle = "this process has no tick of the job planned yet"
	case now.Sub(*j.NextTick) > tickLate: // the state's rule: late 1 s after the tick
		jv.Overdue = true
		jv.Next = "tick due " + fmtAgo(now.Sub(*j.NextTick))
		jv.NextTitle = "this process was to visit the tick of " + j.NextTick.Local().Format(time.RFC3339) +
			" (Redis's clock) and has not yet: Redis failing, the breaker open, or the previous run still holding the job's lock"
	default:
		// The page refreshes every 2 s: a fraction of a second is noise.
		switch left := j.NextTick.Sub(now); {
		case left <= 0:
			jv.Next = "now"
		case left < time.Second:
			jv.Next = "in <1s"
		default:
			jv.Next = "in " + fmtLeft(left)
		}
		jv.NextTitle = "the next tick this process visits: " + j.NextTick.Local().Format(time.RFC3339) +
			" (Redis's clock); of a schedule with ticks under a minute apart, each process visits a share of them"
	}
	if j.LateMS == nil {
		jv.LastRunTitle = "no run in this process yet: each tick runs once fleet-wide, in whichever process takes it"
		return
	}
	late := time.Duration(*j.LateMS * float64(time.Millisecond))
	jv.Late = "on time"
	if late > 0 {
		jv.Late = "late " + fmtDuration(late)
	}
	jv.LateWarn = late > tickMargin
	jv.LateTitle = "the last run in this process began " + fmtDuration(max(late, 0)) + " after its tick, on Redis's clock; " +
		"the fleet's other processes may have run later ticks"
}
