//go:build prometheus

package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// grafanaDashboard is what the tests read of the dashboard's JSON.
type grafanaDashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID    string `json:"refId"`
		Expr     string `json:"expr"`
		Exemplar bool   `json:"exemplar"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panelQuery is one query of the dashboard, named for error messages.
type panelQuery struct{ where, expr string }

// dashboardQueries are the dashboard's panel queries and its variables'
// label_values metrics.
func dashboardQueries(d grafanaDashboard) []panelQuery {
	var qs []panelQuery
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, panelQuery{fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	return qs
}

// ruleQueries are the rules file's expressions, read line by line: each
// expr is a block scalar or one line.
func ruleQueries(t *testing.T) []panelQuery {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var qs []panelQuery
	lines := strings.Split(string(b), "\n")
	alertName := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if name, ok := strings.CutPrefix(l, "- alert: "); ok {
			alertName = name
		}
		expr, ok := strings.CutPrefix(l, "expr: ")
		if !ok {
			continue
		}
		if expr == "|" {
			indent := len(lines[i+1]) - len(strings.TrimLeft(lines[i+1], " "))
			var body []string
			for i++; i < len(lines) && (strings.TrimSpace(lines[i]) == "" || len(lines[i])-len(strings.TrimLeft(lines[i], " ")) >= indent); i++ {
				body = append(body, lines[i])
			}
			i--
			expr = strings.Join(body, "\n")
		}
		qs = append(qs, panelQuery{"rule " + alertName, expr})
	}
	if len(qs) != 6 {
		t.Fatalf("read %d rule expressions from %s, want 6", len(qs), rulesFile)
	}
	return qs
}

// grafanaVars substitutes Grafana's variables as a dashboard at 1s
// scrapes would: every job and queue, the rate interval of four scrapes.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "4s", "${__rate_interval}", "4s",
	"$__interval", "1s", "${__interval}", "1s",
	"${job}", ".*", "$job", ".*",
	"${queue}", ".*", "$queue", ".*",
)

// TestDashboardShape: the dashboard is a Grafana dashboard that imports as
// is: a uid and title, panels with unique ids on the 24-column grid, each
// query reading the Prometheus data source variable, and every variable a
// query uses defined.
func TestDashboardShape(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion 36 or later", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{"__rate_interval": true, "__interval": true}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, want := range []string{"datasource", "job", "queue"} {
		if !vars[want] {
			t.Errorf("no variable %q", want)
		}
	}
	ids := map[int]bool{}
	var queries int
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is zero or not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %q: gridPos %+v is off the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want a title, the data source ${datasource} and a query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: a target without refId or expr", p.Title)
			}
			for _, m := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[m[1]] {
					t.Errorf("panel %q uses $%s, which no variable defines", p.Title, m[1])
				}
			}
		}
	}
	if queries < 15 {
		t.Errorf("%d queries, want the panels of issue 27 (15 or more)", queries)
	}
}

// perProcessGauges are gauges each process reports for a job or a queue:
// summed across replicas they count N times, so every use must be under
// max or min.
var perProcessGauges = regexp.MustCompile(`\bworksteal_(queue_depth|queue_oldest_pending_seconds|job_\w+)\b`)

var maxOrMinBefore = regexp.MustCompile(`\b(max|min)\s*(by\s*\([^)]*\))?\s*$`)

// TestNoPanelOrRuleSumsAPerProcessGauge: every use of a per-process gauge
// in the dashboard and the rules sits directly under max or min (by job
// or queue), so a fleet of replicas counts nothing twice.
func TestNoPanelOrRuleSumsAPerProcessGauge(t *testing.T) {
	t.Parallel()
	for _, q := range append(dashboardQueries(readDashboard(t)), ruleQueries(t)...) {
		for _, loc := range perProcessGauges.FindAllStringIndex(q.expr, -1) {
			depth, open := 0, -1
			for i := loc[0] - 1; i >= 0; i-- {
				switch q.expr[i] {
				case ')':
					depth++
				case '(':
					if depth == 0 {
						open = i
					} else {
						depth--
					}
				}
				if open >= 0 {
					break
				}
			}
			if open < 0 || !maxOrMinBefore.MatchString(q.expr[:open]) {
				t.Errorf("%s: %s is not directly under max or min:\n%s", q.where, q.expr[loc[0]:loc[1]], q.expr)
			}
		}
	}
}

// metricTokens are the worksteal_ names an expression uses: metrics and
// labels alike.
var metricTokens = regexp.MustCompile(`\bworksteal_\w+`)

// TestDashboardOnAFleet runs two example processes with their traffic on
// one Redis, and a third process whose one job runs on a daily schedule
// (the example's run every few seconds), has a real Prometheus scrape them every second and
// evaluate the rules, then checks that every name the dashboard and the rules use
// is a metric or label the processes expose (a renamed metric fails
// here, naming the panel or rule), that every panel's query returns data,
// that the rules evaluate without error and that the slice durations
// carry exemplars linking to recruit spans.
func TestDashboardOnAFleet(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	nightly := startProcess(t, srv, "nightly", recruiter.Func("nightly", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Schedule: "0 3 * * *"})
	targets := []string{startExample(t, srv.URL()), startExample(t, srv.URL()), nightly.addr}
	prom := startPrometheus(t, targets, rulesFile)

	// The names: from a scrape of each process, every sample's metric and
	// label names.
	exposed := map[string]bool{}
	eventually(t, time.Minute, "the fleet exposes the queue's depth and a next tick", func(ctx context.Context) error {
		for _, tg := range targets {
			body, err := get(ctx, "http://"+tg+"/metrics")
			if err != nil {
				return err
			}
			for _, line := range strings.Split(body, "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				for _, tok := range metricTokens.FindAllString(strings.SplitN(line, " ", 2)[0], -1) {
					exposed[tok] = true
				}
			}
		}
		for _, want := range []string{"worksteal_queue_depth", "worksteal_job_fleet", "worksteal_job_next_tick_seconds"} {
			if !exposed[want] {
				return fmt.Errorf("no %s yet", want)
			}
		}
		return nil
	})
	queries := append(dashboardQueries(readDashboard(t)), ruleQueries(t)...)
	used := 0
	for _, q := range queries {
		for _, tok := range metricTokens.FindAllString(q.expr, -1) {
			used++
			if !exposed[tok] {
				t.Errorf("%s uses %s, which the example does not expose as a metric or label", q.where, tok)
			}
		}
	}
	if used < 40 {
		t.Errorf("found %d worksteal_ names in the queries, want the dozens there are: the parsing is broken", used)
	}
	if t.Failed() {
		return
	}

	// Every panel's query returns data, once the fleet has run a while.
	pending := map[string]panelQuery{}
	for _, q := range dashboardQueries(readDashboard(t)) {
		pending[q.where] = q
	}
	eventually(t, 2*time.Minute, "every panel's query returns data", func(ctx context.Context) error {
		for where, q := range pending {
			got, err := prom.queryRange(ctx, grafanaVars.Replace(q.expr), 30*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", where, err) // a query Prometheus refuses never heals
			}
			if len(got) > 0 {
				delete(pending, where)
			}
		}
		if len(pending) > 0 {
			var left []string
			for where, q := range pending {
				left = append(left, where+": "+grafanaVars.Replace(q.expr))
			}
			slices.Sort(left)
			return fmt.Errorf("no data yet for:\n%s", strings.Join(left, "\n"))
		}
		return nil
	})

	// The rules evaluate without error.
	var groups struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := prom.api(t.Context(), "/api/v1/rules", nil, &groups); err != nil {
		t.Fatal(err)
	}
	rules := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q, %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if rules != 6 {
		t.Errorf("prometheus loaded %d rules, want 6", rules)
	}

	// Exemplars: the slice-duration buckets carry recruit spans' trace ids
	// (OpenMetrics, which Prometheus asks for; exemplar storage on).
	eventually(t, time.Minute, "slice durations carry exemplars", func(ctx context.Context) error {
		var data []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		}
		now := time.Now()
		err := prom.api(ctx, "/api/v1/query_exemplars", url.Values{
			"query": {"worksteal_slice_duration_seconds_bucket"},
			"start": {strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)},
			"end":   {strconv.FormatInt(now.Unix(), 10)},
		}, &data)
		if err != nil {
			return err
		}
		for _, s := range data {
			for _, e := range s.Exemplars {
				if len(e.Labels["trace_id"]) == 32 && s.SeriesLabels["worksteal_job"] != "" {
					return nil
				}
			}
		}
		return fmt.Errorf("no exemplar with a trace_id on a job's bucket: %+v", data)
	})
}

func get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), err
}
