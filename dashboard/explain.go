package dashboard

import (
	"math"
	"strconv"
)

// The words the page puts beside a job's numbers, so that a reader who
// has not read the recruiter's documentation is not misled by them: most
// draws of a paced job skip, an automatic job's share of the roll says
// nothing of how often it runs, and a quiet process runs slices nobody
// drew.

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

// explainDraws fills the Drawn and Skipped cells: the slices the pace
// timer started beside the draws, and the skipped draws split by where
// they were held.
func explainDraws(jv *jobView, j DocumentJob) {
	jv.Drawn = fmtCount(j.Drawn)
	if j.Timed > 0 {
		jv.Timed = "+" + fmtCount(j.Timed) + " by the timer"
		jv.DrawnTitle = fmtCount(j.Timed) + " more slices were started by this process's pace timer, without a draw, " +
			"because no request enlisted in time (a quiet process): they have outcomes too, so Ran may exceed Drawn"
	}
	sk := j.Skipped
	jv.Elsewhere = fmtCount(sk.Elsewhere)
	jv.ElsewhereTitle = "Redis answered that the fleet holds the job: locked " + fmtCount(sk.Locked) + " (another process held the job's lock) · cooldown " +
		fmtCount(sk.Cooldown) + " (the fleet ran it within its Every) · paused " + fmtCount(sk.Paused) + " (paused fleet-wide)"
	jv.Here = fmtCount(sk.Gate)
	jv.HereTitle = "held back in this process before any Redis call: most often it already knew the job was held " +
		"(it ran here, or Redis said until when), else a slice of it running here, no free slot, the breaker open, shutting down, or the process busy"
	if sk.Pressured > 0 {
		jv.Busy = fmtCount(sk.Pressured) + " busy"
		jv.HereTitle += " (" + fmtCount(sk.Pressured) + " of them: the process was busy, its goroutines waiting for a CPU; the job is drawn again later)"
	}
}
