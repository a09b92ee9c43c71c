package dashboard

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/worksteal/worksteal/recruiter"
)

var (
	//go:embed dashboard.html
	dashboardHTML string
	//go:embed dashboard.css
	dashboardCSS string
	//go:embed dashboard.js
	dashboardJS string

	dashboardPage = template.Must(template.New("dashboard").Funcs(template.FuncMap{"dict3": itemsOf}).Parse(dashboardHTML))

	// The page's Content-Security-Policy allows its own inline style and
	// script by hash, and fetching itself for the refresh: nothing else,
	// so an error text that slipped past escaping still could not run.
	dashboardCSP = "default-src 'none'; " +
		"script-src " + cspHash(dashboardJS) + "; " +
		"style-src " + cspHash(dashboardCSS) + "; " +
		"img-src data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	dashboardActionsCSP = strings.Replace(dashboardCSP, "form-action 'none'", "form-action 'self'", 1)
)

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// ServeHTTP serves the dashboard: a [Document] as JSON when the
// query has format=json or the request accepts application/json but not
// text/html, the HTML page otherwise. Only GET and HEAD are allowed, and
// with [WithActions] POST, an action (see the package documentation).
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Method == http.MethodPost && d.cfg.actions != nil {
		d.serveAction(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		if d.cfg.actions != nil {
			h.Set("Allow", "GET, HEAD, POST")
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Add("Vary", "Accept")

	doc, err := d.document(d.now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var body bytes.Buffer
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		enc := json.NewEncoder(&body)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			http.Error(w, "dashboard: encoding the document: "+err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		h.Set("Content-Type", "text/html; charset=utf-8")
		v := d.view(doc)
		csp := dashboardCSP
		if d.cfg.actions != nil {
			// The page's forms post to the page itself, nowhere else.
			csp = dashboardActionsCSP
			if r.Header.Get(refreshHeader) == "" { // the refresh swaps <main> only
				v.Actions = d.actionsView(r)
			}
		}
		h.Set("Content-Security-Policy", csp)
		if err := dashboardPage.Execute(&body, v); err != nil {
			http.Error(w, "dashboard: rendering the page: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	out := validUTF8(body.Bytes())
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(out)
	}
}

// validUTF8 is what the dashboard writes of a body it declares UTF-8:
// text read from Redis (a dead letter's cause or payload, a registered
// name) may hold any bytes, and html/template passes invalid ones
// through, so they go out as U+FFFD, here, once for every field.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// wantsJSON: ?format= decides; else an Accept that names JSON and not
// HTML (a browser's names HTML, curl's names neither).
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	namesJSON, namesHTML := false, false
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		namesJSON = namesJSON || mt == "application/json"
		namesHTML = namesHTML || mt == "text/html"
	}
	return namesJSON && !namesHTML
}

// pageView is what the template renders: the document, formatted.
type pageView struct {
	Title       string
	Updated     string
	BreakerOpen bool
	InFlight    int
	Hanging     int
	Jobs        []jobView
	Rates       chartView
	Gauges      []chartView
	Recent      []recentView
	RecentTotal int  // in the document; the page shows the first recentShown
	ShowTasks   bool // WithTasks was given: the table shows, even empty
	Tasks       []taskView
	ShowQueues  bool // WithQueues was given
	Queues      []queueView
	CSS         template.CSS
	JS          template.JS
	// EvictionPolicy is the Redis server's maxmemory-policy; EvictionRisk,
	// when set, what it may evict of worksteal's keys: a banner.
	EvictionPolicy, EvictionRisk string
	// The legend explains pace, the timer and schedules only where they show.
	AnyAutomatic, AnyTimed, AnySchedule bool
	// Actions is the operators' part of the page, with WithActions.
	Actions *actionsView
}

type jobView struct {
	Name, Color                    string
	State, StateLabel, StateReason string
	ShowReason                     bool // the reason shows under the state, not only in its title
	Rate, RateTitle, Every, Budget string
	Automatic                      bool
	Fleet                          string // automatic jobs: the fleet the pace spans, or that it is being learnt
	Spark                          string // automatic jobs: an SVG path of their rate over the window
	Paused                         bool
	PausedLeft, PausedUntil        string
	Attempts, AttemptsSplit        string // drawn + timer + woken, and the split
	AttemptsTitle, Ran, Slices     string
	Elsewhere, ElsewhereTitle      string // held back by the fleet in Redis (locked, cooldown, paused)
	Here, Busy, HereTitle          string // held back in this process (Busy: of them, pressured)
	Errors, Timeouts, Panics, Hung string
	FailedCount, FailedTitle       string
	Failed                         bool // errors, timeouts, panics or hung slices: the cell is flagged
	RowClass                       string
	Items, PerSecond, P50, P99     string
	Max                            string
	LastRun, LastRunTitle          string
	// When the job is next due (Overdue: a tick passed unvisited), and of
	// a scheduled job its expression and how late its last run here began.
	Next, NextTitle string
	Overdue         bool
	Schedule        string
	Late, LateTitle string
	LateWarn        bool
}

type recentView struct {
	Time, TimeTitle, Job, Outcome, OutcomeClass string
	Items, Duration, TraceID, TraceURL, Error   string
	More                                        bool
}

// recentShown is how many recent recruitments the page lists: enough to
// see a pattern, few enough to keep the page short; JSON has them all.
const recentShown = 20

var jobColors = []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}

func (d *Dashboard) view(doc Document) pageView {
	now := doc.Now
	v := pageView{
		Title: doc.Title, Updated: now.Local().Format("15:04:05 MST"),
		BreakerOpen: doc.BreakerOpen, InFlight: doc.InFlight, Hanging: doc.Hanging,
		EvictionPolicy: doc.EvictionPolicy, EvictionRisk: doc.EvictionRisk,
		CSS: template.CSS(dashboardCSS), JS: template.JS(dashboardJS),
		ShowTasks: len(d.cfg.tasks) > 0, Tasks: taskViews(doc.Tasks),
		ShowQueues: len(d.cfg.queues) > 0, Queues: queueViews(doc.Queues),
	}
	times := make([]time.Time, len(doc.Samples))
	for i, s := range doc.Samples {
		times[i] = s.Time
	}
	rates := make([]series, 0, len(doc.Jobs))
	for i, j := range doc.Jobs {
		color := jobColors[i%len(jobColors)]
		jv := jobView{
			Name: j.Name, Color: color,
			Automatic: j.Automatic, Every: fmtMS(j.EveryMS), Budget: fmtMS(j.BudgetMS),
			Ran: fmtCount(j.Ran), Slices: fmtCount(j.Slices),
			Errors: fmtCount(j.Errors), Timeouts: fmtCount(j.Timeouts), Panics: fmtCount(j.Panics), Hung: fmtCount(j.Hung),
			Items: fmtCount(j.Items), PerSecond: "–",
			P50: fmtMS(j.SliceP50MS), P99: fmtMS(j.SliceP99MS), Max: fmtMS(j.SliceMaxMS),
			LastRun: "never",
		}
		if j.Schedule != "" {
			explainSchedule(&jv, j, now)
		} else {
			explainRate(&jv, j)
		}
		explainDraws(&jv, j)
		explainState(&jv, j, now)
		v.AnyAutomatic = v.AnyAutomatic || j.Automatic
		v.AnySchedule = v.AnySchedule || j.Schedule != ""
		v.AnyTimed = v.AnyTimed || j.Timed > 0
		if j.ItemsPerSecond != nil {
			jv.PerSecond = fmtRate(*j.ItemsPerSecond)
		}
		if j.Automatic {
			// A fixed rate is a flat line: only automatic pace has a history worth drawing.
			shares := make([]float64, len(doc.Samples))
			for k, smp := range doc.Samples {
				shares[k] = nan
				if r, ok := smp.Rate[j.Name]; ok {
					shares[k] = r
				}
			}
			jv.Spark = sparkline(now, d.cfg.window, d.cfg.every, times, shares)
		}
		if !j.PausedUntil.IsZero() { // set only while paused at now
			jv.Paused = true
			jv.PausedLeft = fmtLeft(j.PausedUntil.Sub(now))
			jv.PausedUntil = j.PausedUntil.Local().Format(time.RFC3339)
		}
		if j.LastRun != nil {
			jv.LastRun, jv.LastRunTitle = fmtAgo(now.Sub(*j.LastRun)), j.LastRun.Local().Format(time.RFC3339)
		}
		switch j.State {
		case StateFailing:
			jv.RowClass = "failing"
		case StatePaused:
			jv.RowClass = "paused"
		case StateLate, StateHeldBack:
			jv.RowClass = "late"
		}
		v.Jobs = append(v.Jobs, jv)

		s := series{name: j.Name, color: color, values: make([]float64, len(doc.Samples))}
		for k, smp := range doc.Samples {
			s.values[k] = nan
			if r, ok := smp.ItemsPerSecond[j.Name]; ok {
				s.values[k] = r
			}
		}
		rates = append(rates, s)
	}
	v.Rates = layoutChart("Items stolen per second", 960, 280, now, d.cfg.window, d.cfg.every, times, rates)
	for i, name := range doc.Gauges {
		s := series{name: name, color: jobColors[(len(doc.Jobs)+i)%len(jobColors)], values: make([]float64, len(doc.Samples))}
		for k, smp := range doc.Samples {
			s.values[k] = nan
			if g := smp.Gauges[name]; g != nil {
				s.values[k] = *g
			}
		}
		// One gauge spans the page; more share it two by two.
		w, h := 960, 170
		if len(doc.Gauges) > 1 {
			w, h = 470, 190
		}
		v.Gauges = append(v.Gauges, layoutChart(name, w, h, now, d.cfg.window, d.cfg.every, times, []series{s}))
	}
	v.RecentTotal = len(doc.Recent)
	for _, r := range doc.Recent[:min(len(doc.Recent), recentShown)] {
		v.Recent = append(v.Recent, recentView{
			Time: r.Time.Local().Format("15:04:05.000"), TimeTitle: r.Time.Local().Format(time.RFC3339Nano),
			Job: r.Job, Outcome: outcomeLabel(r.Outcome), OutcomeClass: outcomeClass(r.Outcome),
			Items: strconv.Itoa(r.Items), More: r.More, Duration: fmtMS(r.DurationMS),
			TraceID: r.TraceID, TraceURL: r.TraceURL, Error: r.Error,
		})
	}
	return v
}

func outcomeLabel(o recruiter.Outcome) string {
	switch o {
	case recruiter.OutcomeSkippedLocked:
		return "skipped: locked"
	case recruiter.OutcomeSkippedCooldown:
		return "skipped: cooldown"
	case recruiter.OutcomeSkippedPaused:
		return "skipped: paused"
	}
	return string(o)
}

func outcomeClass(o recruiter.Outcome) string {
	switch o {
	case recruiter.OutcomeRan:
		return "o-ran"
	case recruiter.OutcomeSkippedLocked, recruiter.OutcomeSkippedCooldown, recruiter.OutcomeSkippedPaused:
		return "o-skipped"
	case recruiter.OutcomeError:
		return "o-error"
	case recruiter.OutcomeTimeout:
		return "o-timeout"
	case recruiter.OutcomePanic, recruiter.OutcomeHung:
		return "o-panic"
	}
	return "o-other"
}
