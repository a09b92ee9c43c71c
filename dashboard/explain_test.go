package dashboard_test

import (
	"math"
	"net/http"
	"regexp"
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
		row := regexp.MustCompile(`(?s)<tr data-job="` + name + `".*?</tr>`).FindString(page)
		for _, cell := range []string{
			`>auto · ≈1 run / 10s<`, `<span class="aside fleet">` + want + `</span>`, `(37% now)`,
			`"num skipped elsewhere" title="Redis answered that the fleet holds the job: locked 20 `, `>490<`, `"num skipped here" title="held back`, `>4</td>`,
			`"num drawn">498<`, `"num ran">4<`,
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
	fixed := regexp.MustCompile(`(?s)<tr data-job="fixed".*?</tr>`).FindString(page)
	if !strings.Contains(fixed, `<td class="num rate">5%</td>`) || strings.Contains(fixed, `class="aside fleet"`) || !strings.Contains(fixed, `>9</td>`) {
		t.Errorf("the fixed row lost its rate, or shows a fleet:\n%s", fixed)
	}

	note := regexp.MustCompile(`(?s)<p class="note" id="jobs-note">.*?</p>`).FindString(page)
	for _, want := range []string{"<b>Elsewhere</b>: Redis answered that the fleet holds the job", "runs about once per Every across the whole fleet, so most draws of it skip",
		"<b>Here</b>: this process did not ask Redis, most often because it already knew the job was held", "<b>auto</b>: the recruiter paces the job to about one run per Every fleet-wide"} {
		if !strings.Contains(note, want) {
			t.Errorf("the legend lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "timer") {
		t.Errorf("the legend explains the timer, which no job shows:\n%s", note)
	}

	doc := getJSON(t, d)
	for i, want := range []float64{0, 1, 2.46, 119.5, 0, 0} {
		if j := doc.Jobs[i]; j.Fleet != want || j.Skipped.Elsewhere != j.Skipped.Locked+j.Skipped.Cooldown+j.Skipped.Paused {
			t.Errorf("%s: fleet %v, want %v (NaN is 0: not learnt); skipped %+v", j.Name, j.Fleet, want, j.Skipped)
		}
	}
}

// Timed slices show beside the draws, with the legend's word on them,
// only where a job has any.
func TestDashboardExplainsTimedSlices(t *testing.T) {
	t.Parallel()
	d := manual(t, &fakeSource{stats: recruiter.Stats{Jobs: []recruiter.JobStats{
		{Name: "quiet", Rate: 0.1, Every: time.Second, Drawn: 2, Timed: 1234, Ran: 1236},
		{Name: "busy", Rate: 0.1, Every: time.Second, Drawn: 50, Ran: 5, SkippedCooldown: 45},
	}}})
	page := get(t, d, http.MethodGet, "/").Body.String()
	quiet := regexp.MustCompile(`(?s)<tr data-job="quiet".*?</tr>`).FindString(page)
	if !strings.Contains(quiet, `title="1,234 more slices were started by this process&#39;s pace timer`) ||
		!strings.Contains(quiet, `>2<span class="aside timed">&#43;1,234 by the timer</span></td>`) || !strings.Contains(quiet, `"num ran">1,236<`) {
		t.Errorf("the quiet row does not explain its timed slices:\n%s", quiet)
	}
	busy := regexp.MustCompile(`(?s)<tr data-job="busy".*?</tr>`).FindString(page)
	if !strings.Contains(busy, `<td class="num drawn">50</td>`) {
		t.Errorf("the busy row shows timed slices it has not:\n%s", busy)
	}
	if !strings.Contains(page, "<b>By the timer</b>: slices this process's pace timer started because no request enlisted in time; they have no draw, so Ran may exceed Drawn.") {
		t.Error("the legend does not explain the timer")
	}
	if strings.Contains(page, "<b>auto</b>") {
		t.Error("the legend explains automatic pace, which no job has")
	}
	if doc := getJSON(t, d); doc.Jobs[0].Timed != 1234 || doc.Jobs[1].Timed != 0 {
		t.Errorf("JSON timed %d and %d, want 1234 and 0", doc.Jobs[0].Timed, doc.Jobs[1].Timed)
	}
}
