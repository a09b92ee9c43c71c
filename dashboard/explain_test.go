package dashboard_test

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// A policy that may evict worksteal's keys is a banner at the top of the
// page, its sentence escaped; a safe one is named discreetly; an unknown
// one is not named at all. JSON carries both fields as they are.
func TestDashboardEvictionRisk(t *testing.T) {
	t.Parallel()
	const risk = `allkeys-lru may evict the job locks <b>and</b> queued items when Redis is full: set maxmemory-policy noeviction`
	for _, tc := range []struct {
		name, policy, risk string
		want, wantNot      []string
	}{{
		name: "risky", policy: "allkeys-lru", risk: risk,
		want: []string{
			`<div class="risk-banner" id="eviction-risk"><strong>Redis may evict worksteal's keys</strong> · maxmemory-policy <code>allkeys-lru</code> · ` +
				`allkeys-lru may evict the job locks &lt;b&gt;and&lt;/b&gt; queued items when Redis is full: set maxmemory-policy noeviction</div>`,
			`<span id="eviction-policy" title="the Redis server's maxmemory-policy: what Redis evicts when its memory is full">Redis maxmemory-policy allkeys-lru</span>`,
		},
		wantNot: []string{"<b>and</b>", "sees no risk"},
	}, {
		name: "safe", policy: "noeviction",
		want:    []string{`; the recruiter sees no risk to worksteal's keys in it">Redis maxmemory-policy noeviction</span>`},
		wantNot: []string{`id="eviction-risk"`, "Redis may evict"},
	}, {
		name: "unknown", policy: "", risk: "",
		wantNot: []string{`id="eviction-risk"`, `id="eviction-policy"`, "maxmemory-policy"},
	}, {
		name: "markup in the policy", policy: `<img src=x>`, risk: "unknown policy: set maxmemory-policy noeviction",
		want:    []string{`maxmemory-policy <code>&lt;img src=x&gt;</code> · unknown policy`},
		wantNot: []string{"<img"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := busySource(t0)
			src.stats.EvictionPolicy, src.stats.EvictionRisk = tc.policy, tc.risk
			d := manual(t, src)
			page := get(t, d, http.MethodGet, "/", "Accept", browserAccept).Body.String()
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %s", want)
				}
			}
			for _, not := range tc.wantNot {
				if strings.Contains(page, not) {
					t.Errorf("the page holds %s", not)
				}
			}
			// At the top: inside <main>, so the refresh swaps it, and before the header.
			if banner := strings.Index(page, `id="eviction-risk"`); banner >= 0 &&
				!(strings.Index(page, `<main id="dashboard">`) < banner && banner < strings.Index(page, `<header class="top">`)) {
				t.Error("the banner is not at the top of <main>")
			}
			doc := getJSON(t, d)
			if doc.EvictionPolicy != tc.policy || doc.EvictionRisk != tc.risk {
				t.Errorf("JSON eviction policy %q, risk %q; want %q, %q", doc.EvictionPolicy, doc.EvictionRisk, tc.policy, tc.risk)
			}
		})
	}
}

// An automatic job shows its pace, fleet-wide, and the fleet it learnt
// (or that it is learning it), never its share as its rate; a fixed-rate
// job keeps its rate. The legend explains only what the table shows.
func TestDashboardExplainsPace(t *testing.T) {
	t.Parallel()
	job := func(name string, fleet float64) recruiter.JobStats {
		return recruiter.JobStats{Name: name, Automatic: true, Rate: 0.37, Fleet: fleet, Every: 10 * time.Second, Budget: 50 * time.Millisecond,
			Drawn: 498, Ran: 4, SkippedLocked: 20, SkippedCooldown: 470, SkippedGate: 4}
	}
	src := &fakeSource{stats: recruiter.Stats{Jobs: []recruiter.JobStats{
		job("new", 0), job("alone", 1), job("pair", 2.46), job("many", 119.5), job("broken", math.NaN()),
		{Name: "fixed", Rate: 0.05, Every: 2 * time.Second, Budget: 50 * time.Millisecond, Drawn: 10, Ran: 1, SkippedCooldown: 9},
	}}}
	d := manual(t, src)
	page := get(t, d, http.MethodGet, "/").Body.String()
	for name, want := range map[string]string{
		"new": "fleet-wide · size: learning", "alone": "fleet-wide · ≈1 process", "pair": "fleet-wide · ≈2.5 processes",
		"many": "fleet-wide · ≈120 processes", "broken": "fleet-wide · size: learning",
	} {
		row := jobRows(page, name)
		for _, cell := range []string{
			`>auto · ≈1 run / 10s<`, `<span class="aside fleet">` + want + `</span>`, `(37% now)`,
			`"num skipped elsewhere" title="Redis answered that the fleet holds the job: locked 20 `, `>490<`, `"num skipped here" title="attempts held back`, `>4</td>`,
			`"num attempts"`, `>498<span class="aside drawn">498 drawn</span>`, `"num ran">4<`,
		} {
			if !strings.Contains(row, cell) {
				t.Errorf("the %s row lacks %s:\n%s", name, cell, row)
			}
		}
		if strings.Contains(row, ">37%") || strings.Contains(row, `class="aside busy"`) || strings.Contains(row, `class="aside timed"`) {
			t.Errorf("the %s row shows its share as its rate, or busy or timed slices it has not:\n%s", name, row)
		}
	}
	if !strings.Contains(page, "This process has not learnt the fleet&#39;s size yet") {
		t.Error("the learning rows do not say so in their title")
	}
	fixed := jobRows(page, "fixed")
	if !strings.Contains(fixed, `<td class="num rate">5%</td>`) || strings.Contains(fixed, `class="aside fleet"`) || !strings.Contains(fixed, `>9</td>`) {
		t.Errorf("the fixed row lost its rate, or shows a fleet:\n%s", fixed)
	}

	note := jobsNote(page)
	for _, want := range []string{"<dt>Held back by the fleet</dt><dd>attempts that asked Redis and heard that the fleet holds the job",
		"it runs about once per Every across the whole fleet", "<dt>Held back here</dt><dd>attempts this process stopped before any Redis call",
		"so it may exceed the draws, never the attempts", "<dt>auto</dt><dd>the recruiter paces the job to about one run per Every fleet-wide"} {
		if !strings.Contains(note, want) {
			t.Errorf("the legend lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "<dt>cron</dt>") {
		t.Errorf("the legend explains schedules, which no job has:\n%s", note)
	}

	doc := getJSON(t, d)
	for i, want := range []float64{0, 1, 2.46, 119.5, 0, 0} {
		if j := doc.Jobs[i]; j.Fleet != want || j.Skipped.Elsewhere != j.Skipped.Locked+j.Skipped.Cooldown+j.Skipped.Paused {
			t.Errorf("%s: fleet %v, want %v (NaN is 0: not learnt); skipped %+v", j.Name, j.Fleet, want, j.Skipped)
		}
	}
}

// The attempts split into draws, the pace timer's starts and the wakes,
// each shown only where a job has some: held back here counts attempts,
// so it may exceed the draws (the "Skipped here > Drawn").
func TestDashboardExplainsTimedSlices(t *testing.T) {
	t.Parallel()
	d := manual(t, &fakeSource{stats: recruiter.Stats{Jobs: []recruiter.JobStats{
		{Name: "quiet", Rate: 0.1, Every: time.Second, Drawn: 2, Timed: 1234, Woken: 40, Ran: 1236, SkippedGate: 40},
		{Name: "busy", Rate: 0.1, Every: time.Second, Drawn: 50, Ran: 5, SkippedCooldown: 45},
	}}})
	page := get(t, d, http.MethodGet, "/").Body.String()
	quiet := jobRows(page, "quiet")
	if !strings.Contains(quiet, `title="2 drawn by requests&#39; rolls, 1,234 started by this process&#39;s pace timer`) ||
		!strings.Contains(quiet, `>1,276<span class="aside drawn">2 drawn · 1,234 timer · 40 woken</span></td>`) || !strings.Contains(quiet, `"num ran">1,236<`) ||
		!strings.Contains(quiet, `"num skipped here" title="attempts held back`) || !strings.Contains(quiet, `>40</td>`) {
		t.Errorf("the quiet row does not explain its timer's and wakes' attempts:\n%s", quiet)
	}
	busy := jobRows(page, "busy")
	if !strings.Contains(busy, `>50<span class="aside drawn">50 drawn</span>`) {
		t.Errorf("the busy row shows timed slices it has not:\n%s", busy)
	}
	if note := jobsNote(page); !strings.Contains(note, "its pace timer started one because no request came in time (timer), or an enqueue here woke it (woken)") {
		t.Errorf("the legend does not explain the timer:\n%s", note)
	}
	if strings.Contains(page, "<dt>auto</dt>") || strings.Contains(page, "<dt>cron</dt>") {
		t.Error("the legend explains automatic pace or schedules, which no job has")
	}
	if doc := getJSON(t, d); doc.Jobs[0].Timed != 1234 || doc.Jobs[0].Woken != 40 || doc.Jobs[0].Attempts != 1276 || doc.Jobs[1].Timed != 0 || doc.Jobs[1].Attempts != 50 {
		t.Errorf("JSON timed, woken, attempts %d, %d, %d and timed, attempts %d, %d; want 1234, 40, 1276 and 0, 50",
			doc.Jobs[0].Timed, doc.Jobs[0].Woken, doc.Jobs[0].Attempts, doc.Jobs[1].Timed, doc.Jobs[1].Attempts)
	}
}

// A scheduled job shows its expression where a rate stands, the tick
// this process visits next (in a title, when), flagged once it is overdue
// past the margin, and how late its last run here began; the legend
// explains schedules only where one shows. JSON carries the same facts.
func TestDashboardExplainsSchedules(t *testing.T) {
	t.Parallel()
	now := t0
	src := &fakeSource{stats: recruiter.Stats{Jobs: []recruiter.JobStats{
		{Name: "nightly", Schedule: "0 3 * * *", Rate: 0.2, Fleet: 3, Budget: time.Second,
			NextTick: now.Add(3*time.Minute + 12*time.Second), LastRun: now.Add(-21 * time.Hour), Late: 12 * time.Millisecond, Ran: 1, Slices: 1},
		{Name: "stuck", Schedule: "*/10 * * * * *", Budget: time.Second, NextTick: now.Add(-12 * time.Second)},
		{Name: "ticking", Schedule: "* * * * * *", Budget: time.Second,
			NextTick: now.Add(-2 * time.Second), LastRun: now.Add(-time.Second), Late: 7 * time.Second, Ran: 9, Slices: 9},
		{Name: "unplanned", Schedule: "@hourly", Budget: time.Second, LastRun: now.Add(-time.Minute), Ran: 1, Slices: 1},
		{Name: "fixed", Rate: 0.05, Every: 2 * time.Second, Budget: 50 * time.Millisecond},
		{Name: "soon", Schedule: "* * * * * *", Budget: time.Second, NextTick: now.Add(400 * time.Millisecond)},
	}}}
	d := manual(t, src)
	d.SetClock(func() time.Time { return now })
	page := get(t, d, http.MethodGet, "/").Body.String()
	row := func(job string) string { return jobRows(page, job) }

	for job, cells := range map[string][]string{
		"nightly": {
			`<td class="num rate cron" title="cron schedule: the job runs once per tick, fleet-wide, at any traffic, in whichever process takes the tick; ticks are instants on Redis&#39;s clock. This process counted ≈3 processes visiting its ticks.">cron · <code>0 3 * * *</code>`,
			`<td class="num next-due" title="the next tick this process visits: ` + now.Add(3*time.Minute+12*time.Second).Local().Format(time.RFC3339) + ` (Redis&#39;s clock)`,
			`>in 3m12s</td>`, `"num every">–<`,
			`<td class="num last-run" title="` + now.Add(-21*time.Hour).Local().Format(time.RFC3339) + `">21h ago<span class="aside late" title="the last run in this process began 12ms after its tick`,
			`>late 12ms</span></td>`, `<tr data-job="nightly" data-state="on_time">`,
		},
		"stuck": {
			`<tr data-job="stuck" data-state="late" class="late">`, `<code>*/10 * * * * *</code></td>`, `<td class="num next-due due" title="this process was to visit the tick of ` +
				now.Add(-12*time.Second).Local().Format(time.RFC3339) + ` (Redis&#39;s clock) and has not yet: Redis failing, the breaker open, or the previous run still holding the job&#39;s lock">tick due 12s ago</td>`,
			`<span class="aside reason">the tick of 15:09:14 UTC has not started here 12s after it</span>`,
			`<td class="num last-run" title="no run in this process yet: each tick runs once fleet-wide, in whichever process takes it">never</td>`,
		},
		"ticking": {`<tr data-job="ticking" data-state="late" class="late">`, `>tick due 2s ago</td>`, `1s ago<span class="aside late warn" title="the last run in this process began 7s after its tick`, `>late 7s</span>`},
		"soon":    {`>in &lt;1s</td>`, `>never</td>`, `data-state="on_time"`},
		"unplanned": {`<code>@hourly</code></td>`, `<td class="num next-due" title="this process has no tick of the job planned yet">not planned</td>`,
			`1m ago<span class="aside late"`, `>on time</span>`},
	} {
		r := row(job)
		for _, cell := range cells {
			if !strings.Contains(r, cell) {
				t.Errorf("the %s row lacks %s:\n%s", job, cell, r)
			}
		}
		// A schedule's share of the roll and fleet are not its pace.
		if strings.Contains(r, "%") || strings.Contains(r, "auto") || strings.Contains(r, `class="aside fleet"`) || strings.Contains(r, "spark") {
			t.Errorf("the %s row shows a share, automatic pace or a fleet as its rate:\n%s", job, r)
		}
	}
	if fixed := row("fixed"); !strings.Contains(fixed, `<td class="num rate">5%</td>`) || strings.Contains(fixed, "cron") || strings.Contains(fixed, "aside late") {
		t.Errorf("the fixed row shows a schedule:\n%s", fixed)
	}
	note := jobsNote(page)
	for _, want := range []string{
		"<dt>cron</dt><dd>the job runs once per tick of its schedule, fleet-wide, in whichever process takes the tick",
		"<b>next due</b> is the tick this process visits next", "<b>tick due</b>: that tick passed unvisited",
		"<b>late</b> it began after its tick are this process's",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the legend lacks %q:\n%s", want, note)
		}
	}

	doc := getJSON(t, d)
	want := []struct {
		schedule string
		next     time.Time
		overdue  bool
		late     any
	}{
		{"0 3 * * *", now.Add(3*time.Minute + 12*time.Second), false, 12.0},
		{"*/10 * * * * *", now.Add(-12 * time.Second), true, nil},
		{"* * * * * *", now.Add(-2 * time.Second), false, 7000.0},
		{"@hourly", time.Time{}, false, 0.0},
		{"", time.Time{}, false, nil},
		{"* * * * * *", now.Add(400 * time.Millisecond), false, nil},
	}
	for i, w := range want {
		j := doc.Jobs[i]
		var next time.Time
		if j.NextTick != nil {
			next = *j.NextTick
		}
		if j.Schedule != w.schedule || !next.Equal(w.next) || (j.NextTick == nil) != w.next.IsZero() || j.TickOverdue != w.overdue || deref(j.LateMS) != w.late {
			t.Errorf("%s: schedule %q, next tick %v, overdue %v, late %v ms; want %q, %v, %v, %v",
				j.Name, j.Schedule, j.NextTick, j.TickOverdue, deref(j.LateMS), w.schedule, w.next, w.overdue, w.late)
		}
	}
	// The names scripts read, present on every job: null where none.
	raw := get(t, d, http.MethodGet, "/?format=json").Body.String()
	for _, want := range []string{
		`"schedule": "0 3 * * *"`, `"next_tick": "2026-03-14T15:12:38Z"`, `"tick_overdue": true`, `"late_ms": 12,`, `"late_ms": 7000,`,
		`"schedule": "",`, `"next_tick": null`, `"late_ms": null`,
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("the JSON lacks %s:\n%s", want, raw)
		}
	}
}
