package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

// Every job has a state, by the rules of DocumentJob.State and in their
// order of precedence; Redis's answers that the fleet holds a job count
// as runs seen, so a job that runs elsewhere is not late here.
func TestDashboardJobStates(t *testing.T) {
	t.Parallel()
	every := 5 * time.Second
	src := &fakeSource{stats: recruiter.Stats{
		Jobs: []recruiter.JobStats{
			{Name: "fine", Rate: 0.1, Every: every, Ran: 3, Slices: 3, LastRun: t0},
			{Name: "fails", Rate: 0.1, Every: every, Ran: 3, Errors: 1, Slices: 4, LastRun: t0},
			{Name: "never-ok", Rate: 0.1, Errors: 2, Slices: 2, LastRun: t0},
			{Name: "stale", Rate: 0.1, Every: every, Ran: 1, Slices: 1, LastRun: t0.Add(-time.Hour)},
			{Name: "elsewhere", Automatic: true, Rate: 0.1, Every: every},
			{Name: "busy", Rate: 0.1, Every: every, Ran: 1, Slices: 1, LastRun: t0},
			{Name: "paused-failing", Rate: 0.1, Errors: 1, PausedUntil: t0.Add(time.Hour)},
			{Name: "on-traffic", Rate: 0.1},
			{Name: "tick-missed", Schedule: "* * * * * *", NextTick: t0.Add(-1500 * time.Millisecond)},
			// Of a fleet of 10, this process sees about one run in 10.
			{Name: "big-fleet", Automatic: true, Fleet: 10, Rate: 0.01, Every: every, Ran: 1, Slices: 1, LastRun: t0.Add(-time.Minute)},
		},
		Recent: []recruiter.Recruitment{
			{End: t0, Job: "fails", Outcome: recruiter.OutcomeSkippedCooldown},
			{End: t0, Job: "fails", Outcome: recruiter.OutcomeTimeout, Error: "context deadline exceeded"},
			{End: t0, Job: "fails", Outcome: recruiter.OutcomeRan},
		},
	}}
	d := manual(t, src)
	d.SampleAt(t0)
	// 10 s on: the fleet answered for "elsewhere" (it ran within its
	// Every somewhere), and this process, busy, held "busy" back.
	src.mu.Lock()
	src.stats.Jobs[4].SkippedCooldown = 4
	src.stats.Jobs[5].Pressured, src.stats.Jobs[5].SkippedGate = 2, 2
	src.mu.Unlock()
	d.SampleAt(t0.Add(10 * time.Second))
	now := t0.Add(12 * time.Second)
	d.SetClock(func() time.Time { return now })

	states := func() map[string]dashboard.DocumentJob {
		t.Helper()
		doc, err := d.Document()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]dashboard.DocumentJob{}
		for _, j := range doc.Jobs {
			if j.State == "" || j.StateReason == "" {
				t.Errorf("%s: state %q, reason %q; want both", j.Name, j.State, j.StateReason)
			}
			out[j.Name] = j
		}
		return out
	}
	got := states()
	for name, want := range map[string]struct{ state, reason string }{
		"fine":           {dashboard.StateOnTime, "a run seen within 3 × Every = 15s"},
		"big-fleet":      {dashboard.StateOnTime, "a run seen within 3 × Every × the fleet of ≈10 processes = 2m30s"},
		"fails":          {dashboard.StateFailing, "its last run here ended: timeout: context deadline exceeded"},
		"never-ok":       {dashboard.StateFailing, "2 runs here failed and none succeeded"},
		"stale":          {dashboard.StateLate, "no run seen, here or in the fleet, for 1h (over 3 × Every = 15s)"},
		"elsewhere":      {dashboard.StateOnTime, "a run seen within 3 × Every = 15s"},
		"busy":           {dashboard.StateHeldBack, "this process was busy"},
		"paused-failing": {dashboard.StatePaused, "paused fleet-wide until 2026-03-14T16:09:26Z"},
		"on-traffic":     {dashboard.StateOnTime, "without Every or a schedule it runs when requests exit fast"},
		"tick-missed":    {dashboard.StateLate, "has not started here 13.5s after it"},
	} {
		if j := got[name]; j.State != want.state || !strings.Contains(j.StateReason, want.reason) {
			t.Errorf("%s: %s (%s); want %s (%s…)", name, j.State, j.StateReason, want.state, want.reason)
		}
	}
	if j := got["elsewhere"]; j.NextDue == nil || !j.NextDue.Equal(t0.Add(15*time.Second)) {
		t.Errorf("elsewhere: next due %v; want the fleet's run seen at +10s plus Every", j.NextDue)
	}
	if j := got["on-traffic"]; j.NextDue != nil {
		t.Errorf("on-traffic: next due %v; want none", j.NextDue)
	}

	// 30 s on, with nothing new: the fleet's run is 3 × Every old, and
	// the pressure has passed.
	now = t0.Add(30 * time.Second)
	got = states()
	if j := got["elsewhere"]; j.State != dashboard.StateLate {
		t.Errorf("elsewhere, 20 s after the fleet's last run: %s (%s); want late", j.State, j.StateReason)
	}
	if j := got["busy"]; j.State != dashboard.StateLate || !strings.Contains(j.StateReason, "no run seen") {
		t.Errorf("busy, 30 s after its last run: %s (%s); want late", j.State, j.StateReason)
	}
}
