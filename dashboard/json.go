package dashboard

import (
	"math"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// Document is what a [Dashboard] serves as JSON (?format=json or
// Accept: application/json). Its fields and their json names are stable:
// scripts may rely on them; new fields may be added. Durations are
// milliseconds (numbers, fractions allowed), times RFC 3339 in UTC.
type Document struct {
	Title         string    `json:"title"`
	Now           time.Time `json:"now"`
	BreakerOpen   bool      `json:"breaker_open"`    // recruitment keeps away from Redis
	InFlight      int       `json:"in_flight"`       // slices running now
	Hanging       int       `json:"hanging"`         // hung slices not yet returned
	SampleEveryMS float64   `json:"sample_every_ms"` // the interval of Samples
	WindowMS      float64   `json:"window_ms"`       // how far back Samples go, at most
	// SamplesSkipped counts the samples not taken because the source's
	// Stats panicked.
	SamplesSkipped uint64                `json:"samples_skipped"`
	Jobs           []DocumentJob         `json:"jobs"`    // in registration order
	Gauges         []string              `json:"gauges"`  // names of the gauges, in the order of the options
	Samples        []DocumentSample      `json:"samples"` // oldest first
	Recent         []DocumentRecruitment `json:"recent"`  // newest first
	// Tasks holds the counts of each task type of the [WithTasks]
	// sources, in their order, each sorted by type; empty without one.
	Tasks []DocumentTask `json:"tasks"`
	// Queues holds the depth of each [WithQueues] source, in their
	// order, as last read (at most 2 s before Now); empty without one.
	Queues []DocumentQueue `json:"queues"`
	// EvictionPolicy is the Redis server's maxmemory-policy as the
	// recruiter last read it; "" until read, or if the server refused.
	EvictionPolicy string `json:"eviction_policy"`
	// EvictionRisk says, in a sentence, what that policy may evict of
	// worksteal's keys and what to set instead; "" when nothing is at
	// risk (noeviction) or the policy is unknown. The page shows it in a
	// banner.
	EvictionRisk string `json:"eviction_risk"`
}

// DocumentJob is one job's counters since its recruiter started; see
// [recruiter.JobStats].
type DocumentJob struct {
	Name string `json:"name"`
	// State is the job's health at Now, the first that applies of
	// [StatePaused], [StateFailing], [StateLate], [StateHeldBack] and
	// [StateOnTime]; StateReason says why in a sentence. Late: no run
	// seen for 3 × Every, here or in the fleet (Redis answering that the
	// job is locked or cooling down counts as a run seen; of an automatic
	// job, 3 × Every × its Fleet), or of a schedule, a tick not started
	// here 1 s after it or a last run here that began over 1 s after its
	// tick; failing: its newest run here failed; held back: this process,
	// busy, held it back in the last 10 s. A job without Every or a
	// schedule is never late.
	State       string `json:"state"`
	StateReason string `json:"state_reason"`
	// NextDue is when the job is next due: a schedule's next tick here
	// (as NextTick), or the last run seen plus Every; null without Every
	// or a schedule, or while no tick is planned.
	NextDue *time.Time `json:"next_due"`
	// Rate is the job's share of enlistments now: its fixed Rate, or,
	// for an Automatic or scheduled job, what the recruiter set last,
	// which says nothing of how often the job runs.
	Rate      float64 `json:"rate"`
	Automatic bool    `json:"automatic"` // paced by the recruiter: Every without Rate
	// Fleet is, for an Automatic job, the number of processes visiting
	// it as this process last learnt it: the pace aims at about one run
	// per Every across them all; for a scheduled job, the processes
	// counted visiting its ticks. 0 until learnt, and for a fixed Rate.
	Fleet float64 `json:"fleet"`
	// Schedule is the job's cron schedule; "" for a job with Every or
	// Rate. A scheduled job runs once per tick, fleet-wide, in whichever
	// process takes the tick.
	Schedule string `json:"schedule"`
	// NextTick is the tick this process visits next, on Redis's clock;
	// null without a schedule, or while none is planned. Of a schedule
	// whose ticks are under a minute apart, each process visits a share
	// of the ticks, so the fleet's next tick may come sooner.
	NextTick *time.Time `json:"next_tick"`
	// TickOverdue is set when NextTick passed more than 5 s before Now
	// and this process has not visited it yet: Redis failing, the breaker
	// open, or the previous run still holding the job's lock. A tick
	// starts within about a second when all is well.
	TickOverdue bool `json:"tick_overdue"`
	// LateMS is how long after its tick, on Redis's clock, the last run
	// of a scheduled job in this process began; null if it has not run
	// here (the fleet's other processes may have run its ticks).
	LateMS *float64 `json:"late_ms"`
	// PausedUntil is when the job's fleet-wide pause ends, as the
	// recruiter last learnt it; absent unless the job is paused at Now.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	EveryMS     float64   `json:"every_ms"` // 0: no Every
	BudgetMS    float64   `json:"budget_ms"`
	Drawn       uint64    `json:"drawn"`
	Timed       uint64    `json:"timed"` // slices the pace timer started without a draw: outcomes may outnumber Drawn
	Woken       uint64    `json:"woken"` // slices an enqueue here asked for, without a draw
	// Attempts is Drawn + Timed + Woken: every attempt to run a slice,
	// each ending held back (Skipped), with an outcome, or with a drawn
	// request that was not a fast exit. Skipped.Gate counts attempts, so
	// it may exceed Drawn, never Attempts.
	Attempts uint64          `json:"attempts"`
	Ran      uint64          `json:"ran"`
	Skipped  DocumentSkipped `json:"skipped"`
	Errors   uint64          `json:"errors"`
	Timeouts uint64          `json:"timeouts"`
	Panics   uint64          `json:"panics"`
	Hung     uint64          `json:"hung"`
	Slices   uint64          `json:"slices"`
	Items    uint64          `json:"items"`
	// ItemsPerSecond is the rate of the latest sample; null before the
	// sampler has two samples of the job.
	ItemsPerSecond *float64   `json:"items_per_second"`
	SliceP50MS     float64    `json:"slice_p50_ms"`
	SliceP99MS     float64    `json:"slice_p99_ms"`
	SliceMaxMS     float64    `json:"slice_max_ms"`
	LastRun        *time.Time `json:"last_run"` // end of the last slice; null if none
}

// DocumentSkipped splits a job's skipped draws by cause. A job with Every
// runs about once per Every across the fleet, so most draws of it skip,
// by design. Elsewhere counts those that Redis answered for the fleet
// (Locked, Cooldown, Paused); Gate those this process held back before
// any Redis call, most often because it already knew the job was held.
type DocumentSkipped struct {
	Total     uint64 `json:"total"`
	Elsewhere uint64 `json:"elsewhere"` // Locked + Cooldown + Paused: held by the fleet
	Locked    uint64 `json:"locked"`    // another process held the job's lock
	Cooldown  uint64 `json:"cooldown"`  // the job ran within its Every, fleet-wide
	Paused    uint64 `json:"paused"`    // an operator paused the job, fleet-wide
	Gate      uint64 `json:"gate"`      // held back in this process before Redis, most often for a cool-off it knew
	Pressured uint64 `json:"pressured"` // of Gate: held back because this process was busy
}

// DocumentSample is one sample of the chart.
type DocumentSample struct {
	Time time.Time `json:"time"`
	// ItemsPerSecond holds, by job, the items stolen per second since the
	// previous sample; it is empty in the first sample.
	ItemsPerSecond map[string]float64 `json:"items_per_second"`
	// Rate holds, by job, its share of enlistments when sampled (see
	// [DocumentJob.Rate]): the history of automatic pace.
	Rate map[string]float64 `json:"rate"`
	// Gauges holds each gauge's value by name; null when its read failed
	// or timed out.
	Gauges map[string]*float64 `json:"gauges"`
}

// DocumentRecruitment is one recent recruitment; see [recruiter.Recruitment].
type DocumentRecruitment struct {
	Time       time.Time         `json:"time"` // when it ended
	Job        string            `json:"job"`
	Outcome    recruiter.Outcome `json:"outcome"`
	Items      int               `json:"items"`
	More       bool              `json:"more"`
	DurationMS float64           `json:"duration_ms"` // of the job's Run; 0 if it did not run
	TraceID    string            `json:"trace_id,omitempty"`
	TraceURL   string            `json:"trace_url,omitempty"` // with WithTraceURL
	Error      string            `json:"error,omitempty"`
}

// Document returns what the dashboard serves as JSON, as of now: a fresh
// snapshot of its source and task sources, with the samples kept. It is
// for a host that serves, logs or checks the document its own way; the
// handler serves the same value. It fails when a source's Stats panics.
func (d *Dashboard) Document() (Document, error) { return d.document(d.now()) }

// document builds the dashboard's document at now from a fresh snapshot
// of its source and the samples kept; it fails if the source panics.
func (d *Dashboard) document(now time.Time) (Document, error) {
	stats, err := d.stats()
	if err != nil {
		return Document{}, err
	}
	taskRows, err := d.taskRows()
	if err != nil {
		return Document{}, err
	}
	samples, skipped := d.samples()
	seen := d.observe(stats, now)
	doc := Document{
		Title:          d.cfg.title,
		Now:            now.UTC(),
		BreakerOpen:    stats.BreakerOpen,
		InFlight:       stats.InFlight,
		Hanging:        stats.Hanging,
		SampleEveryMS:  ms(d.cfg.every),
		WindowMS:       ms(d.cfg.window),
		SamplesSkipped: skipped,
		EvictionPolicy: stats.EvictionPolicy,
		EvictionRisk:   stats.EvictionRisk,
		Jobs:           make([]DocumentJob, 0, len(stats.Jobs)),
		Gauges:         make([]string, 0, len(d.cfg.gauges)),
		Samples:        make([]DocumentSample, 0, len(samples)),
		Recent:         make([]DocumentRecruitment, 0, len(stats.Recent)),
		Tasks:          taskRows,
		Queues:         d.queueRows(now),
	}
	for _, g := range d.cfg.gauges {
		doc.Gauges = append(doc.Gauges, g.name)
	}
	for _, s := range samples {
		ds := DocumentSample{
			Time: s.at.UTC(), ItemsPerSecond: make(map[string]float64, len(s.rates)),
			Rate: make(map[string]float64, len(s.shares)), Gauges: make(map[string]*float64, len(s.gauges)),
		}
		for i, r := range s.rates {
			ds.ItemsPerSecond[s.jobs[i]] = r
		}
		for i, r := range s.shares {
			ds.Rate[s.jobs[i]] = r
		}
		for i, g := range s.gauges {
			var v *float64
			if g.ok {
				v = &g.v
			}
			ds.Gauges[d.cfg.gauges[i].name] = v
		}
		doc.Samples = append(doc.Samples, ds)
	}
	for _, js := range stats.Jobs {
		dj := DocumentJob{
			Name: js.Name, Rate: js.Rate, Automatic: js.Automatic, Fleet: finiteOrZero(js.Fleet), EveryMS: ms(js.Every), BudgetMS: ms(js.Budget),
			Drawn: js.Drawn, Timed: js.Timed, Woken: js.Woken, Attempts: js.Drawn + js.Timed + js.Woken, Ran: js.Ran,
			Skipped: DocumentSkipped{
				Total: js.Skipped(), Elsewhere: js.SkippedLocked + js.SkippedCooldown + js.SkippedPaused,
				Locked: js.SkippedLocked, Cooldown: js.SkippedCooldown, Paused: js.SkippedPaused,
				Gate: js.SkippedGate, Pressured: js.Pressured,
			},
			Errors: js.Errors, Timeouts: js.Timeouts, Panics: js.Panics, Hung: js.Hung, Slices: js.Slices, Items: js.Items,
			SliceP50MS: ms(js.SliceP50), SliceP99MS: ms(js.SliceP99), SliceMaxMS: ms(js.SliceMax),
		}
		if len(samples) > 0 {
			if r, ok := samples[len(samples)-1].rate(js.Name); ok {
				dj.ItemsPerSecond = &r
			}
		}
		if js.Paused(now) {
			dj.PausedUntil = js.PausedUntil.UTC()
		}
		if !js.LastRun.IsZero() {
			t := js.LastRun.UTC()
			dj.LastRun = &t
		}
		if js.Schedule != "" {
			dj.Schedule = js.Schedule
			if !js.NextTick.IsZero() {
				t := js.NextTick.UTC()
				dj.NextTick = &t
				dj.TickOverdue = now.Sub(t) > tickMargin
			}
			if dj.LastRun != nil {
				late := ms(js.Late)
				dj.LateMS = &late
			}
		}
		health(&dj, js, stats.Recent, seen[js.Name], now)
		doc.Jobs = append(doc.Jobs, dj)
	}
	for _, r := range stats.Recent {
		doc.Recent = append(doc.Recent, DocumentRecruitment{
			Time: r.End.UTC(), Job: r.Job, Outcome: r.Outcome, Items: r.Items, More: r.More,
			DurationMS: ms(r.Duration), TraceID: r.TraceID, TraceURL: d.traceURL(r.TraceID), Error: r.Error,
		})
	}
	return doc, nil
}

// finiteOrZero keeps a source's estimate out of the JSON when it cannot
// be encoded (NaN, ±Inf) or makes no sense (negative).
func finiteOrZero(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// tickMargin is how far past its tick a scheduled job's visit, or the
// start of its run, may be before the page flags it: a tick starts within
// about a second, and the margin leaves room for the gap between Redis's
// clock and this process's.
const tickMargin = 5 * time.Second

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
