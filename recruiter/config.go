package recruiter

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/schedule"
	"github.com/worksteal/worksteal/internal/seams"
)

// Defaults applied to zero fields of [Config] and [JobConfig]; each field's
// doc says its own.
const (
	breakerCooldownDefault  = 5 * time.Second
	breakerThresholdDefault = 3
	budgetDefault           = 50 * time.Millisecond
	maxConcurrentDefault    = 1
	prefixDefault           = "worksteal"
	redisTimeoutDefault     = 500 * time.Millisecond
)

// Bounds of JobConfig.Budget: a slice borrows a web server's time, so a
// longer one is a mistake, not a setting; a shorter one could not even
// take its lock.
const (
	budgetMax = time.Minute
	budgetMin = time.Millisecond
)

// everyMax bounds JobConfig.Every: stolen work is for chores that recur
// while a fleet serves traffic; a week is already a cron job's territory.
const everyMax = 7 * 24 * time.Hour

// Errors returned by [New] and [Recruiter.Register]; they wrap a message
// naming the field.
var (
	ErrInvalidConfig = errors.New("recruiter: invalid config")
	ErrInvalidJob    = errors.New("recruiter: invalid job")
	ErrDuplicateJob  = errors.New("recruiter: duplicate job")
	ErrClosed        = errors.New("recruiter: shut down")
)

// Config configures a [Recruiter]. The zero value is valid: every field has
// a documented default.
type Config struct {
	// BreakerCooldown is how long the circuit breaker, once open, keeps
	// recruitment away from Redis before one slice probes it. Meanwhile,
	// once every fifth of it (at least a second apart; a cooldown of a
	// second or less makes none), one slice checks whether Redis answers again
	// (a PTTL of its job's lock key) and, if it does, probes at once: a
	// recovered Redis, or a promoted master, gets stolen work back within
	// about a fifth of the cooldown. Default 5s.
	BreakerCooldown time.Duration
	// BreakerThreshold is the number of consecutive Redis errors that open
	// the breaker. Default 3.
	BreakerThreshold int
	// Inline runs slices on the enlisting goroutine (after the middleware
	// has flushed the response), for platforms that throttle CPU once a
	// response is sent. Default false: a background goroutine, and the
	// caller returns at once.
	Inline bool
	// Logger receives slice errors, panics and overruns. Default slog.Default().
	Logger *slog.Logger
	// MaxConcurrent bounds the slices this process runs at once; an
	// enlistment that finds them all busy is dismissed, never queued. A
	// schedule's visit held back half a second past its tick (or half its
	// gap) takes one spare slot beyond it, so that no tick is lost to it.
	// Default 1.
	MaxConcurrent int
	// MeterProvider provides the meter. Default: the otel global.
	MeterProvider metric.MeterProvider
	// Prefix starts every Redis key the recruiter writes. Default "worksteal".
	Prefix string
	// Pressure is the scheduling latency at which this process counts as
	// busy: a slice does not start while the 99th percentile of the time
	// its goroutines waited for a CPU (runtime/metrics'
	// /sched/latencies:seconds, over the last 100ms or more) is at least
	// Pressure. The slice is dismissed before any Redis call and counted in
	// [JobStats].Pressured; the job is drawn again later, and one held back
	// for 10s since it last passed the gate runs anyway. Default 1ms; from
	// 100µs to 1s; negative: off.
	Pressure time.Duration
	// RedisTimeout bounds each of the recruiter's own Redis calls (lock,
	// release, cooldown). Default 500ms.
	RedisTimeout time.Duration
	// TracerProvider provides the tracer. Default: the otel global.
	TracerProvider trace.TracerProvider
	// TrafficOnly makes pacing strictly traffic-driven: a job runs only on
	// an enlistment's time, so a process without fast exits runs nothing.
	// Default false: the recruiter's pace timer makes each automatically
	// paced job's planned visit when no enlistment made it within an
	// eighth of Every (at most 1s), so a quiet fleet still runs every job
	// with Every about once per Every, at the same round trips per run.
	// Jobs with a fixed Rate are traffic-driven either way. With
	// TrafficOnly a schedule's visits, the timer's otherwise, are
	// enlistments' too: it takes a share of the roll.
	TrafficOnly bool

	// The roll, the clock and the pressure reading, set by this module's
	// tests only (internal/seams).
	testSeams

	// tickDenseGap replaces tickDenseGap (schedule.go).
	tickDenseGap time.Duration
}

type testSeams = seams.Recruiter

func (c Config) withDefaults() Config {
	c.BreakerCooldown = cmp.Or(c.BreakerCooldown, breakerCooldownDefault)
	c.BreakerThreshold = cmp.Or(c.BreakerThreshold, breakerThresholdDefault)
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, maxConcurrentDefault)
	c.Pressure = cmp.Or(c.Pressure, pressureDefault)
	c.Prefix = cmp.Or(c.Prefix, prefixDefault)
	c.RedisTimeout = cmp.Or(c.RedisTimeout, redisTimeoutDefault)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.tickDenseGap = cmp.Or(c.tickDenseGap, tickDenseGap)
	return c
}

// Bounds of Config: values past them are mistakes, not settings.
const (
	breakerCooldownMax  = time.Hour
	breakerThresholdMax = 1000
	maxConcurrentMax    = 1024
	redisTimeoutMax     = 30 * time.Second
)

func (c Config) validate() error {
	switch {
	case c.BreakerCooldown < 0 || c.BreakerCooldown > breakerCooldownMax:
		return fmt.Errorf("%w: BreakerCooldown %v is not in [0, %v]", ErrInvalidConfig, c.BreakerCooldown, breakerCooldownMax)
	case c.BreakerThreshold < 0 || c.BreakerThreshold > breakerThresholdMax:
		return fmt.Errorf("%w: BreakerThreshold %d is not in [0, %d]", ErrInvalidConfig, c.BreakerThreshold, breakerThresholdMax)
	case c.MaxConcurrent < 0 || c.MaxConcurrent > maxConcurrentMax:
		return fmt.Errorf("%w: MaxConcurrent %d is not in [0, %d]", ErrInvalidConfig, c.MaxConcurrent, maxConcurrentMax)
	case c.Pressure > 0 && (c.Pressure < pressureMin || c.Pressure > pressureMax):
		return fmt.Errorf("%w: Pressure %v is neither negative (off) nor in [%v, %v]", ErrInvalidConfig, c.Pressure, pressureMin, pressureMax)
	case c.RedisTimeout < 0 || c.RedisTimeout > redisTimeoutMax:
		return fmt.Errorf("%w: RedisTimeout %v is not in [0, %v]", ErrInvalidConfig, c.RedisTimeout, redisTimeoutMax)
	}
	if err := names.Check(c.Prefix); err != nil {
		return fmt.Errorf("%w: Prefix: %v", ErrInvalidConfig, err)
	}
	return nil
}

// JobConfig configures one job at [Recruiter.Register]. Set Every, and
// the recruiter paces the job itself; or set Rate, a fixed share of
// enlistments, for the Internet Archive's semantics.
type JobConfig struct {
	// Budget is the most time one slice may take: its context's deadline.
	// The job's lock lives a little longer: budget + max(budget/2, 250ms).
	// Default 50ms; from 1ms to 1m.
	Budget time.Duration
	// Every is how often the job should run, fleet-wide; at most a week.
	//
	// Without Rate (automatic pace), the job runs about once per Every,
	// whatever the traffic and the number of processes: once in each
	// Every-long slot of Redis's clock at most, so at most window/Every + 1
	// times in any window, and in nearly every slot while the fleet
	// enlists ten times per Every or more. Two runs may come closer than
	// Every across a slot's boundary. A slice that reports More is
	// continued soon, at a pace that rises with the backlog (up to a
	// quarter of a process's time) and winds down as slices catch up;
	// a slice that finds nothing brings it back to once per Every.
	//
	// With Rate, the job runs at most once per Every: after a slice that
	// reports no More, the job's lock stays in Redis as a cooldown until
	// Every has passed since the slice began. (If Redis fails just as the
	// cooldown is set, the key keeps only the lock's TTL, and the job may
	// run again sooner, once.) Zero: the lock is released after each
	// slice.
	Every time.Duration
	// Rate, when set, is the fixed share of enlistments that draw this job,
	// in (0, 1]. The rates of all jobs of a recruiter sum to at most 1; the
	// rest of each roll goes to automatically paced jobs (and, with
	// TrafficOnly, scheduled ones), or is "dismissed". Zero: automatic pace, which needs Every, or a
	// Schedule.
	Rate float64
	// Schedule, instead of Every and Rate, runs the job once per tick of a
	// cron schedule, fleet-wide, at any traffic including none: a 5-field
	// expression ("0 3 * * *"), one with a leading seconds field
	// ("*/10 * * * * *"), or a descriptor (@hourly, @daily, @weekly,
	// @monthly, @yearly), in UTC unless prefixed with CRON_TZ=Zone (IANA
	// names: "CRON_TZ=Europe/Paris 0 3 * * *"). Ticks are instants on
	// Redis's clock, so every process agrees on them, and each runs at most
	// once while Redis keeps its writes, starting within about a second.
	// A run that fails is not retried: the next tick runs. After an outage
	// that spans ticks, one catch-up run for the latest. A local time that
	// a daylight-saving change skips has no tick that day; one it repeats
	// has one tick, the first. @every is refused (its ticks count from each
	// process's start): use Every; so are a step as long as its field
	// ("*/60" in minutes keeps only its first value) and a CRON_TZ= that
	// names no zone. The job's context carries its tick ([Tick]).
	// docs/configuration.md#schedules has the policies in full.
	Schedule string
	// Slices is how many slices of the job may run at once across the
	// fleet, one per process, from 1 to 64: a job whose slices do not
	// step on each other, as a queue's drain (its claims are atomic).
	// While a slice holds the job's lock, a process that continues a
	// backlog, or that an enqueue woke (automatic pace), or any that the
	// roll drew (a fixed Rate), takes one of Slices-1 seats beside it;
	// a planned visit never does, so a quiet job still runs once per
	// slot. A schedule's job runs one slice per tick: Slices must be 1.
	// Zero: what the job asks ([SideBySide]), else 1.
	Slices int
}

// slicesMax bounds JobConfig.Slices: each seat is a field the acquire
// script may read.
const slicesMax = 64

// SideBySide is a Job whose slices may run at once on several processes:
// jobs.Drain's. Slices is the default of its [JobConfig].Slices.
type SideBySide interface {
	Job
	Slices() int
}

func (c JobConfig) withDefaults() JobConfig {
	c.Budget = cmp.Or(c.Budget, budgetDefault)
	return c
}

// autoEveryMin bounds Every under automatic pace: its slots are counted in
// Redis milliseconds.
const autoEveryMin = 10 * time.Millisecond

func (c JobConfig) validate(job string) error {
	if c.Slices < 0 || c.Slices > slicesMax {
		return fmt.Errorf("%w %q: Slices %d is not in [0, %d]", ErrInvalidJob, job, c.Slices, slicesMax)
	}
	if c.Schedule != "" {
		switch {
		case c.Slices > 1:
			return fmt.Errorf("%w %q: Slices %d with a Schedule: a tick runs one slice", ErrInvalidJob, job, c.Slices)
		case c.Every != 0 || c.Rate != 0:
			return fmt.Errorf("%w %q: Schedule %q with Every or Rate: a scheduled job runs once per tick; set one of the three", ErrInvalidJob, job, c.Schedule)
		case c.Budget < budgetMin || c.Budget > budgetMax:
			return fmt.Errorf("%w %q: Budget %v is not in [%v, %v]", ErrInvalidJob, job, c.Budget, budgetMin, budgetMax)
		}
		if _, err := schedule.Parse(c.Schedule); err != nil {
			return fmt.Errorf("%w %q: Schedule %q: %v", ErrInvalidJob, job, c.Schedule, err)
		}
		return nil
	}
	switch {
	case c.Rate == 0 && c.Every == 0:
		return fmt.Errorf("%w %q: set Every (how often the job should run: the recruiter paces it), Rate (a fixed share of enlistments) or Schedule (cron)", ErrInvalidJob, job)
	case math.IsNaN(c.Rate) || c.Rate < 0 || c.Rate > 1:
		return fmt.Errorf("%w %q: Rate %v is not in (0, 1]", ErrInvalidJob, job, c.Rate)
	case c.Budget < budgetMin:
		return fmt.Errorf("%w %q: Budget %v is below %v", ErrInvalidJob, job, c.Budget, budgetMin)
	case c.Budget > budgetMax:
		return fmt.Errorf("%w %q: Budget %v is above %v: a slice must stay small", ErrInvalidJob, job, c.Budget, budgetMax)
	case c.Every < 0:
		return fmt.Errorf("%w %q: Every %v is negative", ErrInvalidJob, job, c.Every)
	case c.Every > everyMax:
		return fmt.Errorf("%w %q: Every %v is above %v", ErrInvalidJob, job, c.Every, everyMax)
	case c.Rate == 0 && c.Every < autoEveryMin:
		return fmt.Errorf("%w %q: Every %v is below %v, the least the recruiter paces", ErrInvalidJob, job, c.Every, autoEveryMin)
	}
	return nil
}
