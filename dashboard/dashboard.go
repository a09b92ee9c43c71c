package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/internal/ring"
	"github.com/worksteal/worksteal/recruiter"
)

// Source is what a [Dashboard] shows; *recruiter.Recruiter is one.
type Source interface {
	Stats() recruiter.Stats
}

// Option configures [New].
type Option interface{ apply(*config) }

type config struct {
	title    string
	every    time.Duration
	window   time.Duration
	gauges   []gauge
	traceURL string
	tasks    []TaskSource
	queues   []QueueSource
	actions  *actions // nil: read-only
	logger   *slog.Logger
	tp       trace.TracerProvider
}

type gauge struct {
	name string
	read func(context.Context) (float64, error)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Defaults and bounds of the dashboard's options.
const (
	sampleDefault = time.Second
	windowDefault = 10 * time.Minute
	// sampleMin is the shortest sample interval: the sampler
	// reads every counter and gauge each time.
	sampleMin = 10 * time.Millisecond
	// samplesMax bounds window/interval, the samples kept in
	// memory. A sample costs about 100 bytes, plus 16 per job and 16 per
	// gauge: 10,000 samples of 8 jobs and 2 gauges hold about 2.6 MB, and
	// each request for the page or the JSON walks all of them.
	samplesMax = 10_000
	// gaugeTimeoutMax bounds one gauge read; a shorter sample
	// interval bounds it to the interval.
	gaugeTimeoutMax = time.Second
)

// ErrInvalidOption is wrapped by the errors of [New] about its
// source and options.
var ErrInvalidOption = errors.New("dashboard: invalid source or option")

// WithTitle sets the page's title; "worksteal" by default.
func WithTitle(title string) Option {
	return optionFunc(func(c *config) { c.title = title })
}

// WithGauge adds a series the dashboard samples and charts beside the
// items stolen, such as a queue's depth. read is called once per sample
// with a deadline of the sample interval, at most [gaugeTimeoutMax];
// an error, no answer by then, NaN, or a value beyond ±1e300 (no chart
// could scale it) leaves a gap in the chart (null in JSON).
// read should return once its context is done: the sampler does not wait
// for it, but it starts no new read of that gauge while one is pending.
func WithGauge(name string, read func(context.Context) (float64, error)) Option {
	return optionFunc(func(c *config) { c.gauges = append(c.gauges, gauge{name, read}) })
}

// WithSampleEvery sets how often the dashboard samples its source and
// gauges for the chart; [sampleDefault] by default.
func WithSampleEvery(d time.Duration) Option {
	return optionFunc(func(c *config) { c.every = d })
}

// WithWindow sets how much history the chart keeps;
// [windowDefault] by default.
func WithWindow(d time.Duration) Option {
	return optionFunc(func(c *config) { c.window = d })
}

// WithTraceURL links each recruitment's trace id to a tracing UI. format
// holds one %s, replaced by the trace id, and no other verb but %%, a
// literal %, as in fmt; so a percent-encoded URL, such as a Grafana
// explore link, is pasted with each % doubled. For example
// "http://localhost:16686/trace/%s" (Jaeger) or
// "http://grafana:3000/explore?left=%%7B%%22queries%%22:[%%7B%%22query%%22:%%22%s%%22%%7D]%%7D"
// (Tempo).
func WithTraceURL(format string) Option {
	return optionFunc(func(c *config) { c.traceURL = format })
}

// Dashboard is an http.Handler showing what a recruiter stole: its jobs'
// counters, a chart of items stolen per second and of the gauges, the
// most recent recruitments, and with [WithTasks] the attempts of each
// task type. It serves HTML to browsers and a
// [Document] as JSON when asked (?format=json or
// Accept: application/json). Mount it like pprof:
//
//	d, err := dashboard.New(rec)
//	mux.Handle("/debug/worksteal", d)
//	defer d.Close()
type Dashboard struct {
	src Source
	cfg config
	now func() time.Time // the clock of the page; tests set it

	logger *slog.Logger
	tracer trace.Tracer

	mu     sync.Mutex // guards the fields up to pending
	ring   *ring.Ring[sample]
	last   map[string]uint64 // Items by job at the last sample
	lastAt time.Time         // the last sample's time

	jobs    []string        // the job names of the last sample, shared by the samples that have them
	skipped uint64          // samples not taken because the source panicked
	seen    map[string]seen // by job: when its counters last grew (health.go)

	pending []atomic.Bool // per gauge: a read has not returned yet

	queueCache queueCache // the last reading of the WithQueues sources

	ctx    context.Context // cancelled by Close: gauge reads stop
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a dashboard of src and starts its sampler, which
// takes one sample at once and then one per interval; call
// [Dashboard.Close] to stop it. Errors wrap [ErrInvalidOption].
func New(src Source, opts ...Option) (*Dashboard, error) {
	d, err := newDashboard(src, opts...)
	if err != nil {
		return nil, err
	}
	go d.run()
	return d, nil
}

// newDashboard builds a dashboard without its sampler goroutine, so that
// tests can call sampleAt with the times they choose.
func newDashboard(src Source, opts ...Option) (*Dashboard, error) {
	// A nil pointer in the interface would pass src == nil and panic in
	// the sampler at its first Stats.
	if src == nil || reflect.ValueOf(src).Kind() == reflect.Pointer && reflect.ValueOf(src).IsNil() {
		return nil, fmt.Errorf("%w: the source is nil", ErrInvalidOption)
	}
	cfg := config{title: "worksteal", every: sampleDefault, window: windowDefault}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dashboard{
		logger:  cmp.Or(cfg.logger, slog.Default()),
		tracer:  tracerOf(cfg.tp),
		src:     src,
		cfg:     cfg,
		now:     time.Now,
		ring:    ring.New[sample](int(cfg.window / cfg.every)),
		last:    map[string]uint64{},
		seen:    map[string]seen{},
		pending: make([]atomic.Bool, len(cfg.gauges)),
		done:    make(chan struct{}),
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d, nil
}

func (c config) validate() error {
	switch {
	case c.every < sampleMin:
		return fmt.Errorf("%w: sample interval %v is under %v", ErrInvalidOption, c.every, sampleMin)
	case c.window < c.every:
		return fmt.Errorf("%w: window %v is shorter than the sample interval %v", ErrInvalidOption, c.window, c.every)
	case c.window/c.every > samplesMax:
		return fmt.Errorf("%w: window %v over sample interval %v keeps %d samples, more than %d",
			ErrInvalidOption, c.window, c.every, c.window/c.every, samplesMax)
	}
	if c.traceURL != "" && !validTraceURL(c.traceURL) {
		return fmt.Errorf("%w: trace URL format %q must hold one %%s and no other %% but %%%% (a literal %%)",
			ErrInvalidOption, c.traceURL)
	}
	if err := c.actions.validate(); err != nil {
		return err
	}
	for _, src := range c.tasks {
		if src == nil || reflect.ValueOf(src).Kind() == reflect.Pointer && reflect.ValueOf(src).IsNil() {
			return fmt.Errorf("%w: a task source is nil", ErrInvalidOption)
		}
	}
	for _, q := range c.queues {
		if q == nil || reflect.ValueOf(q).Kind() == reflect.Pointer && reflect.ValueOf(q).IsNil() {
			return fmt.Errorf("%w: a queue source is nil", ErrInvalidOption)
		}
	}
	seen := map[string]bool{}
	for _, g := range c.gauges {
		switch {
		case g.name == "" || g.read == nil:
			return fmt.Errorf("%w: a gauge needs a name and a read function (got %q)", ErrInvalidOption, g.name)
		case seen[g.name]:
			return fmt.Errorf("%w: two gauges are named %q", ErrInvalidOption, g.name)
		}
		seen[g.name] = true
	}
	return nil
}

// run is the sampler goroutine.
func (d *Dashboard) run() {
	defer close(d.done)
	ticker := time.NewTicker(d.cfg.every)
	defer ticker.Stop()
	d.sampleAt(time.Now())
	for {
		select {
		case <-d.ctx.Done():
			return
		case now := <-ticker.C:
			d.sampleAt(now)
		}
	}
}

// Close stops the sampler and waits for it; gauge reads in flight see
// their context cancelled. The handler still serves the last samples.
// Close is idempotent and always returns nil.
func (d *Dashboard) Close() error {
	d.cancel() // safe to call again
	<-d.done
	return nil
}

func (d *Dashboard) traceURL(id string) string {
	if d.cfg.traceURL == "" || id == "" {
		return ""
	}
	return fmt.Sprintf(d.cfg.traceURL, id) // validTraceURL: one %s, else only %%
}

// validTraceURL reports whether format holds exactly one %s and no other
// verb than %%, so that fmt.Sprintf(format, id) is all it takes.
func validTraceURL(format string) bool {
	verbs := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		switch {
		case i < len(format) && format[i] == '%':
		case i < len(format) && format[i] == 's':
			verbs++
		default:
			return false
		}
	}
	return verbs == 1
}
