package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/joblock"
	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/internal/schedule"
	"github.com/worksteal/worksteal/queue"
)

// Errors of this package. Those about an argument wrap a message naming
// it; a Redis error is wrapped with the operation's name.
var (
	ErrInvalidArgument = errors.New("inspect: invalid argument")
	ErrInvalidConfig   = errors.New("inspect: invalid config")
	ErrUnknownQueue    = errors.New("inspect: unknown queue")
	ErrUnknownJob      = errors.New("inspect: unknown job")
	ErrNotFound        = errors.New("inspect: not found")
)

const (
	prefixDefault  = "worksteal"
	previewDefault = 256
	previewMax     = 1 << 20
)

// Config configures an [Inspector]. The zero value is valid.
type Config struct {
	// Prefix is the fleet's key prefix, as its queues' and recruiters'
	// Config.Prefix. Default "worksteal".
	Prefix string
	// Preview bounds the payload bytes returned with each item (the
	// item's Size says how large it is). Default 256; at most 1 MiB.
	Preview int
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, prefixDefault)
	c.Preview = cmp.Or(c.Preview, previewDefault)
	return c
}

func (c Config) validate() error {
	if err := names.Check(c.Prefix); err != nil {
		return fmt.Errorf("%w: Prefix: %v", ErrInvalidConfig, err)
	}
	if c.Preview < 0 || c.Preview > previewMax {
		return fmt.Errorf("%w: Preview %d is not in [0, %d]", ErrInvalidConfig, c.Preview, previewMax)
	}
	return nil
}

// Inspector reads and acts on what a fleet keeps in Redis under one
// prefix. It is safe for concurrent use and holds no state of its own.
type Inspector struct {
	rdb redis.UniversalClient
	cfg Config
}

// New returns an Inspector of the keys under cfg.Prefix. It makes no
// Redis call.
func New(rdb redis.UniversalClient, cfg Config) (*Inspector, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidArgument)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Inspector{rdb: rdb, cfg: cfg}, nil
}

// Prefix returns the prefix the Inspector reads.
func (in *Inspector) Prefix() string { return in.cfg.Prefix }

// Queue is a registered queue and what it holds.
type Queue struct {
	Name string
	// Lease, MaxAttempts and ResultRetention are the queue's config as
	// the process that last registered it had it.
	Lease           time.Duration
	MaxAttempts     int
	ResultRetention time.Duration
	Registered      time.Time // when a process last registered it, by that process's clock
	Depth           queue.Depth
}

// Queues lists the registered queues, by name, each with its depth.
func (in *Inspector) Queues(ctx context.Context) ([]Queue, error) {
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("inspect: queues: %w", err)
	}
	out := make([]Queue, 0, len(snap.Queues))
	for _, q := range snap.Queues {
		d, err := in.store(q.Name).Depth(ctx)
		if err != nil {
			return nil, fmt.Errorf("inspect: queues: %w", err)
		}
		out = append(out, Queue{Name: q.Name, Lease: ms(q.LeaseMS), MaxAttempts: q.MaxAttempts,
			ResultRetention: ms(q.RetentionMS), Registered: unixMS(q.RegisteredMS), Depth: queue.Depth(d)})
	}
	return out, nil
}

// Job is a registered job and the state of its lock.
type Job struct {
	Name string
	// Budget, Every, Rate and Schedule are its recruiter.JobConfig, as
	// the process that last registered it had it.
	Budget     time.Duration
	Every      time.Duration
	Rate       float64
	Schedule   string
	Registered time.Time
	Lock       Lock
	// NextTick is a schedule's next tick after the reading, by Redis's
	// clock; zero without a schedule.
	NextTick time.Time
}

// Pace says how the job is paced: "every 1m0s", "rate 0.1, every 1m0s",
// "rate 0.1" or "schedule 0 3 * * *".
func (j Job) Pace() string {
	switch {
	case j.Schedule != "":
		return "schedule " + j.Schedule
	case j.Rate == 0:
		return "every " + j.Every.String()
	case j.Every > 0:
		return fmt.Sprintf("rate %g, every %v", j.Rate, j.Every)
	}
	return fmt.Sprintf("rate %g", j.Rate)
}

// Lock is what a job's lock holds in Redis. Times are by Redis's clock;
// a zero time is unset or past.
type Lock struct {
	// Running: a slice holds the lock, until HeldUntil at most.
	Running   bool
	HeldUntil time.Time
	// RestUntil: the job rests (its cooldown, or its slot's run taken).
	RestUntil time.Time
	// Paused: an operator paused the job, until PausedUntil.
	Paused      bool
	PausedUntil time.Time
	// LastTick is a schedule's latest tick taken (or skipped while
	// paused).
	LastTick time.Time
	// Fleet is the number of processes that visit the job, as the
	// automatic pace counted them; 0 while unknown.
	Fleet float64
	// Legacy: the lock is a string lock of an earlier version.
	Legacy bool
	// Now is Redis's clock at the reading.
	Now time.Time
}

// Jobs lists the registered jobs, by name, with their locks.
func (in *Inspector) Jobs(ctx context.Context) ([]Job, error) {
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("inspect: jobs: %w", err)
	}
	out := make([]Job, 0, len(snap.Jobs))
	for _, j := range snap.Jobs {
		job, err := in.job(ctx, j)
		if err != nil {
			return nil, err
		}
		out = append(out, job)
	}
	return out, nil
}

// Job returns the registered job called name, with its lock;
// ErrUnknownJob if the registry does not list it.
func (in *Inspector) Job(ctx context.Context, name string) (Job, error) {
	j, err := in.registeredJob(ctx, name)
	if err != nil {
		return Job{}, err
	}
	return in.job(ctx, j)
}

func (in *Inspector) registeredJob(ctx context.Context, name string) (registry.Job, error) {
	if err := names.Check(name); err != nil {
		return registry.Job{}, fmt.Errorf("%w: job: %v", ErrInvalidArgument, err)
	}
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return registry.Job{}, fmt.Errorf("inspect: job %s: %w", name, err)
	}
	for _, j := range snap.Jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return registry.Job{}, fmt.Errorf("%w %q under prefix %q (the registry lists a job once a recruiter that has it ran a slice)", ErrUnknownJob, name, in.cfg.Prefix)
}

func (in *Inspector) job(ctx context.Context, j registry.Job) (Job, error) {
	l, err := joblock.Read(ctx, in.rdb, joblock.Key(in.cfg.Prefix, j.Name))
	if err != nil {
		return Job{}, fmt.Errorf("inspect: job %s: lock: %w", j.Name, err)
	}
	job := Job{Name: j.Name, Budget: ms(j.BudgetMS), Every: ms(j.EveryMS), Rate: j.Rate, Schedule: j.Schedule,
		Registered: unixMS(j.RegisteredMS),
		Lock: Lock{Running: !l.HeldUntil.IsZero(), HeldUntil: l.HeldUntil, RestUntil: l.RestUntil,
			Paused: !l.PausedUntil.IsZero(), PausedUntil: l.PausedUntil, LastTick: l.Tick, Fleet: l.Fleet,
			Legacy: l.Legacy, Now: l.Now}}
	if j.Schedule != "" {
		if s, err := schedule.Parse(j.Schedule); err == nil {
			job.NextTick = s.Next(l.Now)
		}
	}
	return job, nil
}

// Pause pauses the registered job for d (1ms to 30 days) across the
// fleet, as [github.com/worksteal/worksteal/recruiter.Recruiter.Pause] does: no slice of it starts until
// d has passed or [Inspector.Resume] is called; a slice already running
// ends as it would. Processes learn of it on their next visit to the
// job's lock.
func (in *Inspector) Pause(ctx context.Context, job string, d time.Duration) error {
	if d <= 0 || d > joblock.PauseMax {
		return fmt.Errorf("%w: pause %q for %v: the duration must be positive and at most %v", ErrInvalidArgument, job, d, joblock.PauseMax)
	}
	return in.setPause(ctx, job, d)
}

// Resume undoes a pause of the registered job across the fleet;
// resuming a job that is not paused does nothing.
func (in *Inspector) Resume(ctx context.Context, job string) error {
	return in.setPause(ctx, job, 0)
}

func (in *Inspector) setPause(ctx context.Context, job string, d time.Duration) error {
	if _, err := in.registeredJob(ctx, job); err != nil {
		return err
	}
	if err := joblock.Pause(ctx, in.rdb, joblock.Key(in.cfg.Prefix, job), d); err != nil {
		return fmt.Errorf("inspect: pause or resume %s: %w", job, err)
	}
	return nil
}

// TaskType is a task type that a tasks.Mux's job serves on a queue.
type TaskType struct {
	Queue, Type, Codec string
	Registered         time.Time
}

// TaskTypes lists the registered task types, by queue and type.
func (in *Inspector) TaskTypes(ctx context.Context) ([]TaskType, error) {
	snap, err := registry.Read(ctx, in.rdb, in.cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("inspect: task types: %w", err)
	}
	out := make([]TaskType, 0, len(snap.Types))
	for _, t := range snap.Types {
		out = append(out, TaskType{Queue: t.Queue, Type: t.Type, Codec: t.Codec, Registered: unixMS(t.RegisteredMS)})
	}
	return out, nil
}

// store is the storage of the queue called name under the prefix; only
// its keys matter to what this package calls.
func (in *Inspector) store(name string) *qstore.Store {
	return qstore.New(in.rdb, name, qstore.Config{Prefix: in.cfg.Prefix, MaxPayload: previewMax})
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func unixMS(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}
