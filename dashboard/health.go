package dashboard

import (
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// A job's state on the page: the first thing an operator reads, computed
// here from what the recruiter's stats already say, so that the page and
// the JSON agree.
const (
	StateOnTime   = "on_time"   // nothing is overdue and its last run here did not fail
	StateLate     = "late"      // no run seen for 3 × Every, or a tick not started 1 s after it
	StateFailing  = "failing"   // its last run here failed
	StatePaused   = "paused"    // paused fleet-wide by an operator
	StateHeldBack = "held_back" // this process, busy, held it back lately (Config.Pressure)
)

// Bounds of the states.
const (
	// lateEvery: a job with Every is late once no run was seen for this
	// many Every, here or (from Redis's answers) in the fleet.
	lateEvery = 3
	// tickLate: a scheduled job is late once a tick passed this long
	// without a start here, or its last run here began this long after
	// its tick. Ticks are on Redis's clock, now on this process's: a gap
	// between the clocks shows as lateness.
	tickLate = time.Second
	// heldRecent: a job held back by pressure within this long is shown
	// held back.
	heldRecent = 10 * time.Second
)

// seen is what the dashboard remembers of a job's counters between two
// snapshots, to date what changed: the stats hold counts, not times.
type seen struct {
	first                time.Time // the job's first snapshot here
	fleet, pressured     uint64    // SkippedLocked+SkippedCooldown, Pressured: at the last snapshot
	fleetAt, pressuredAt time.Time // when each last grew; zero if never seen growing
}

// observe dates what changed in the jobs' counters since the previous
// snapshot. It is called with every snapshot, the sampler's and each
// request's; d.mu must not be held.
func (d *Dashboard) observe(stats recruiter.Stats, now time.Time) map[string]seen {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]seen, len(stats.Jobs))
	for _, js := range stats.Jobs {
		s, ok := d.seen[js.Name]
		fleet := js.SkippedLocked + js.SkippedCooldown
		switch {
		case !ok:
			s = seen{first: now, fleet: fleet, pressured: js.Pressured}
		case now.Before(s.first):
			// A snapshot dated before the first (tests pick their times):
			// nothing to date.
		default:
			if fleet > s.fleet {
				s.fleetAt = now
			}
			if js.Pressured > s.pressured {
				s.pressuredAt = now
			}
			s.fleet, s.pressured = fleet, js.Pressured
		}
		d.seen[js.Name] = s
		out[js.Name] = s
	}
	return out
}

// lastRunOutcome returns the outcome of the job's newest recruitment that
// ran or failed, from the recent ones (newest first); ok is false when
// none of them is the job's.
func lastRunOutcome(recent []recruiter.Recruitment, job string) (recruiter.Recruitment, bool) {
	for _, r := range recent {
		if r.Job != job {
			continue
		}
		switch r.Outcome {
		case recruiter.OutcomeRan, recruiter.OutcomeError, recruiter.OutcomeTimeout, recruiter.OutcomePanic, recruiter.OutcomeHung:
			return r, true
		}
	}
	return recruiter.Recruitment{}, false
}

// health sets dj's state, its reason and its next due time, in this
// order of precedence: paused, failing, late, held back, on time.
func health(dj *DocumentJob, js recruiter.JobStats, recent []recruiter.Recruitment, s seen, now time.Time) {
	// The last run seen: here, or the fleet's as Redis's answers showed
	// it (locked: running elsewhere; cooldown: it ran within its Every).
	lastSeen := js.LastRun
	if s.fleetAt.After(lastSeen) {
		lastSeen = s.fleetAt
	}
	if js.Schedule != "" {
		if !js.NextTick.IsZero() {
			t := js.NextTick.UTC()
			dj.NextDue = &t
		}
	} else if js.Every > 0 {
		t := cmpOr(lastSeen, s.first).Add(js.Every).UTC()
		dj.NextDue = &t
	}

	if js.Paused(now) {
		dj.State, dj.StateReason = StatePaused, "paused fleet-wide until "+js.PausedUntil.UTC().Format(time.RFC3339)
		return
	}
	if r, ok := lastRunOutcome(recent, js.Name); ok && r.Outcome != recruiter.OutcomeRan {
		dj.State, dj.StateReason = StateFailing, "its last run here ended: "+string(r.Outcome)
		if r.Error != "" {
			dj.StateReason += ": " + r.Error
		}
		return
	} else if !ok && js.Failed() > 0 && js.Ran == 0 {
		dj.State, dj.StateReason = StateFailing, fmtCount(js.Failed())+" runs here failed and none succeeded"
		return
	}
	if reason := lateness(js, lastSeen, s, now); reason != "" {
		dj.State, dj.StateReason = StateLate, reason
		if now.Sub(s.pressuredAt) < heldRecent {
			dj.StateReason += "; this process, busy, held it back lately"
		}
		return
	}
	if !s.pressuredAt.IsZero() && now.Sub(s.pressuredAt) < heldRecent {
		dj.State, dj.StateReason = StateHeldBack, "this process was busy (its goroutines waiting for a CPU) and held the job back "+
			fmtAgo(now.Sub(s.pressuredAt))+"; it is drawn again later"
		return
	}
	dj.State = StateOnTime
	switch {
	case js.Schedule != "" && js.LastRun.IsZero():
		dj.StateReason = "no tick run here yet; the next is not overdue"
	case js.Schedule != "":
		dj.StateReason = "its last run here began " + fmtDuration(max(js.Late, 0)) + " after its tick; no tick is overdue"
	case js.Every > 0 && lastSeen.IsZero():
		_, rule := lateLimit(js)
		dj.StateReason = "no run seen yet; late after " + rule
	case js.Every > 0:
		_, rule := lateLimit(js)
		dj.StateReason = "a run seen within " + rule
	case js.LastRun.IsZero():
		dj.StateReason = "no run here yet; without Every or a schedule it runs when requests exit fast, and nothing is overdue"
	default:
		dj.StateReason = "its last run here succeeded; without Every or a schedule nothing is overdue"
	}
}

// lateness says why a job is late, or "" if it is not.
func lateness(js recruiter.JobStats, lastSeen time.Time, s seen, now time.Time) string {
	if js.Schedule != "" {
		if !js.NextTick.IsZero() && now.Sub(js.NextTick) > tickLate {
			return "the tick of " + js.NextTick.UTC().Format(time.TimeOnly) + " UTC has not started here " + fmtDuration(now.Sub(js.NextTick)) + " after it"
		}
		if !js.LastRun.IsZero() && js.Late > tickLate {
			return "its last run here began " + fmtDuration(js.Late) + " after its tick"
		}
		return ""
	}
	if js.Every <= 0 {
		return ""
	}
	limit, rule := lateLimit(js)
	if lastSeen.IsZero() {
		if waited := now.Sub(s.first); waited > limit {
			return "no run seen, here or in the fleet, in the " + fmtDuration(waited) + " this page has watched (over " + rule + ")"
		}
		return ""
	}
	if since := now.Sub(lastSeen); since > limit {
		return "no run seen, here or in the fleet, for " + fmtDuration(since) + " (over " + rule + ")"
	}
	return ""
}

// lateLimit is how long a job with Every may go without a run seen here
// before it is late, and the rule in words. Under automatic pace each of
// a fleet of n processes visits the job about once per n × Every, so
// this process sees a run about that often: the limit scales with the
// fleet it learnt.
func lateLimit(js recruiter.JobStats) (time.Duration, string) {
	limit := lateEvery * js.Every
	if js.Automatic && js.Fleet > 1 {
		return time.Duration(float64(limit) * js.Fleet), "3 × Every × the fleet of " + fmtFleet(js.Fleet) +
			" = " + fmtDuration(time.Duration(float64(limit)*js.Fleet)) + ": this process visits about one run in " + trimFloat(js.Fleet, 1)
	}
	return limit, "3 × Every = " + fmtDuration(limit)
}

// cmpOr returns t, or else when t is zero.
func cmpOr(t, orElse time.Time) time.Time {
	if t.IsZero() {
		return orElse
	}
	return t
}
