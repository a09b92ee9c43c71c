package dashboard

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// sample is one point of the dashboard's chart. Its job names are shared
// with the samples before it until the jobs change, so a sample costs a
// float per job, not a map.
type sample struct {
	at     time.Time
	jobs   []string     // the names of rates and shares; never changed once taken
	rates  []float64    // items per second since the previous sample, by jobs; nil for the first sample
	shares []float64    // each job's share of enlistments (JobStats.Rate), by jobs: automatic pace changes it
	gauges []gaugeValue // in the order of the options
}

// rate returns the sample's rate of job, if it has one.
func (s sample) rate(job string) (float64, bool) {
	if s.rates == nil {
		return 0, false
	}
	if i := slices.Index(s.jobs, job); i >= 0 {
		return s.rates[i], true
	}
	return 0, false
}

// gaugeLimit bounds the gauge values charted: beyond it, an axis rounded
// to nice numbers would overflow to infinity.
const gaugeLimit = 1e300

// gaugeValue is one reading of a gauge; !ok is a gap (error, timeout,
// panic, NaN or infinity).
type gaugeValue struct {
	v  float64
	ok bool
}

// sampleAt takes one sample, dated now: the jobs' Items counters turned
// into rates over the time since the previous sample, and one reading of
// each gauge. It is the sampler's step; tests call it with chosen times.
// A source that panics skips the sample: a Source is the user's code, and
// the sampler's goroutine has no caller to recover it.
func (d *Dashboard) sampleAt(now time.Time) {
	stats, err := d.stats()
	if err != nil {
		d.mu.Lock()
		d.skipped++
		d.mu.Unlock()
		return
	}
	d.observe(stats, now)
	gauges := d.readGauges()

	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.EqualFunc(d.jobs, stats.Jobs, func(name string, js recruiter.JobStats) bool { return name == js.Name }) {
		d.jobs = make([]string, len(stats.Jobs))
		for i, js := range stats.Jobs {
			d.jobs[i] = js.Name
		}
	}
	s := sample{at: now, jobs: d.jobs, gauges: gauges, shares: make([]float64, len(stats.Jobs))}
	elapsed := now.Sub(d.lastAt).Seconds()
	hasPrev := !d.lastAt.IsZero() && elapsed > 0
	if hasPrev {
		s.rates = make([]float64, len(stats.Jobs))
	}
	last := make(map[string]uint64, len(stats.Jobs))
	for i, js := range stats.Jobs {
		s.shares[i] = js.Rate
		last[js.Name] = js.Items
		if !hasPrev {
			continue
		}
		// A job missing from the previous sample was registered since: its
		// counter started at zero. A counter that went down belongs to a new
		// recruiter (a restart): what it counts now was done since, so it is
		// the delta, as Prometheus's rate() treats counter resets.
		prev := d.last[js.Name]
		delta := js.Items - prev
		if js.Items < prev {
			delta = js.Items
		}
		s.rates[i] = float64(delta) / elapsed
	}
	d.last, d.lastAt = last, now

	d.ring.Add(s)
}

// readGauges reads every gauge at once, each on its own goroutine, and
// waits for them until a shared deadline: the sample interval, at most
// gaugeTimeoutMax. A gauge whose previous read has not returned
// is not read again (a gap), so a read that ignores its context pins one
// goroutine, not one per sample.
func (d *Dashboard) readGauges() []gaugeValue {
	if len(d.cfg.gauges) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(d.ctx, min(d.cfg.every, gaugeTimeoutMax))
	defer cancel()
	answers := make([]chan gaugeValue, len(d.cfg.gauges))
	for i, g := range d.cfg.gauges {
		if !d.pending[i].CompareAndSwap(false, true) {
			continue
		}
		answers[i] = make(chan gaugeValue, 1)
		go func() {
			v := readGauge(ctx, g.read) // recovers a panic: pending is always cleared
			// Cleared before the answer is sent: the next sample, which may
			// start as soon as this one has the answer, must find the gauge free.
			d.pending[i].Store(false)
			answers[i] <- v
		}()
	}
	values := make([]gaugeValue, len(d.cfg.gauges))
	for i, answer := range answers {
		if answer == nil {
			continue
		}
		select {
		case values[i] = <-answer:
		case <-ctx.Done():
			// An answer may have arrived with the deadline: keep it.
			select {
			case values[i] = <-answer:
			default:
			}
		}
	}
	return values
}

// stats returns the source's stats, or an error if Stats panicked.
func (d *Dashboard) stats() (stats recruiter.Stats, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("dashboard: the source panicked: %v", p)
		}
	}()
	return d.src.Stats(), nil
}

// readGauge calls read, turning an error, a panic, a value JSON cannot
// carry or one too large to chart into a gap: a gauge must never take the
// sampler or the page down.
func readGauge(ctx context.Context, read func(context.Context) (float64, error)) (gv gaugeValue) {
	defer func() {
		if recover() != nil {
			gv = gaugeValue{}
		}
	}()
	v, err := read(ctx)
	if err != nil || math.IsNaN(v) || math.Abs(v) > gaugeLimit {
		return gaugeValue{}
	}
	return gaugeValue{v: v, ok: true}
}

// samples returns the samples kept, oldest first, and how many were
// skipped. Samples are never changed once taken, so sharing their slices
// is safe.
func (d *Dashboard) samples() ([]sample, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ring.Slice(), d.skipped
}
