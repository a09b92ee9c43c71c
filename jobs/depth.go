package jobs

import (
	"cmp"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/worksqueue"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/telemetry"
)

// DepthConfig configures [QueueDepth]. The zero value is valid.
type DepthConfig struct {
	// MaxAge is how long this process reports a reading after it made
	// it; then its gauges go quiet until it reads again. Set it to two or
	// three times the Every the job is registered with, so that some
	// process reports a reading at all times and few report at once.
	// Default 1m; at most a day.
	MaxAge time.Duration
	// MeterProvider makes the gauges. Default: the otel global.
	MeterProvider metric.MeterProvider
	// Name overrides the job's name, "depth.QUEUE" by default. Like any
	// job name: 1 to 128 bytes of [A-Za-z0-9._-].
	Name string
	// RedisTimeout bounds the read. Zero: 250ms; at most 10s.
	RedisTimeout time.Duration
}

const (
	depthMaxAgeDefault = time.Minute
	depthMaxAgeMax     = 24 * time.Hour
)

func (c DepthConfig) withDefaults() DepthConfig {
	c.MaxAge = cmp.Or(c.MaxAge, depthMaxAgeDefault)
	c.RedisTimeout = cmp.Or(c.RedisTimeout, drain.RedisTimeoutDefault)
	if c.MeterProvider == nil {
		c.MeterProvider = otel.GetMeterProvider()
	}
	return c
}

func (c DepthConfig) validate() error {
	switch {
	case c.MaxAge < 0 || c.MaxAge > depthMaxAgeMax:
		return fmt.Errorf("%w: MaxAge %v is not in (0, %v]", ErrInvalidConfig, c.MaxAge, depthMaxAgeMax)
	case c.RedisTimeout < time.Millisecond || c.RedisTimeout > drain.RedisTimeoutMax:
		return fmt.Errorf("%w: RedisTimeout %v is not in [1ms, %v]", ErrInvalidConfig, c.RedisTimeout, drain.RedisTimeoutMax)
	case c.Name != "":
		return drain.CheckName(c.Name)
	}
	return nil
}

// QueueDepth returns the job that reads q's depth ([queue.Queue.Depth],
// one script call in O(log n)) once a slice, and reports the reading as
// the gauges [telemetry.MetricQueueDepth], by state, and
// [telemetry.MetricQueueOldestPending], each by queue, for cfg.MaxAge
// after it. Register it with Every (say 15s): its lock lets one process
// at a time read, once per Every fleet-wide, so the queue's depth costs
// Redis one call per Every whatever the fleet's size, and a scrape of the
// metrics none.
//
// Each process reports only the readings it made, while they are fresh:
// at any moment one process, or two around a handover, reports the
// queue's depth. Aggregate with max by queue and state (never sum, which
// would count a queue twice): the most a reading of the last MaxAge
// showed. A slice reports no items.
func QueueDepth(q *queue.Queue, cfg DepthConfig) (recruiter.Job, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	j := &depthJob{
		queueMark: worksqueue.New(q.Config().Prefix, q.Name(), qstore.ScriptCommands),
		name:      cmp.Or(cfg.Name, drain.JobName("depth", q.Name())),
		q:         q,
		cfg:       cfg,
		now:       time.Now,
		queue:     telemetry.AttrQueue.String(q.Name()),
	}
	j.observe()
	return j, nil
}

// depthJob is QueueDepth's job.
type depthJob struct {
	queueMark // for the recruiter's check of its prefix
	name      string
	q         *queue.Queue
	cfg       DepthConfig
	now       func() time.Time // tests move it
	queue     attribute.KeyValue
	reading   atomic.Pointer[depthReading] // the latest made here; nil until one is
}

// depthReading is one read of a queue's depth, and when it was made on
// this process's clock.
type depthReading struct {
	depth queue.Depth
	at    time.Time
}

func (j *depthJob) Name() string { return j.name }

// Run reads the depth once and keeps it for the gauges.
func (j *depthJob) Run(ctx context.Context) (recruiter.Report, error) {
	rctx, cancel := drain.RedisContext(ctx, j.cfg.RedisTimeout)
	defer cancel()
	d, err := j.q.Depth(rctx)
	if err != nil {
		return recruiter.Report{}, fmt.Errorf("jobs: %s: %w", j.name, err)
	}
	j.reading.Store(&depthReading{depth: d, at: j.now()})
	return recruiter.Report{}, nil
}

// observe registers the gauges' callback, which reports the latest
// reading while it is younger than MaxAge and nothing after. Errors go to
// [otel.Handle], as otel instrumentation does; the job still runs.
func (j *depthJob) observe() {
	meter := j.cfg.MeterProvider.Meter(telemetry.ScopeName, metric.WithInstrumentationVersion(telemetry.Version))
	depth, err := meter.Int64ObservableGauge(telemetry.MetricQueueDepth,
		metric.WithDescription("The items a queue holds, by state, as the latest reading of this process showed."),
		metric.WithUnit("{item}"))
	if err != nil {
		otel.Handle(err)
		return
	}
	oldest, err := meter.Float64ObservableGauge(telemetry.MetricQueueOldestPending,
		metric.WithDescription("How long the queue's next pending item had waited, as the latest reading of this process showed."),
		metric.WithUnit("s"))
	if err != nil {
		otel.Handle(err)
		return
	}
	states := [...]string{telemetry.QueuePending, telemetry.QueueLeased, telemetry.QueueExpired,
		telemetry.QueueDelayed, telemetry.QueueDue, telemetry.QueueDead}
	var byState [len(states)]metric.ObserveOption
	for i, s := range states {
		byState[i] = metric.WithAttributeSet(attribute.NewSet(j.queue, telemetry.AttrQueueState.String(s)))
	}
	byQueue := metric.WithAttributeSet(attribute.NewSet(j.queue))
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		r := j.reading.Load()
		if r == nil || j.now().Sub(r.at) > j.cfg.MaxAge {
			return nil
		}
		d := r.depth
		for i, n := range [...]int64{d.Pending, d.Leased, d.Expired, d.Delayed, d.Due, d.Dead} {
			o.ObserveInt64(depth, n, byState[i])
		}
		o.ObserveFloat64(oldest, d.OldestPending.Seconds(), byQueue)
		return nil
	}, depth, oldest)
	if err != nil {
		otel.Handle(err)
	}
}
