package recruiter

import (
	"time"

	"github.com/worksteal/worksteal/internal/schedule"
	"github.com/worksteal/worksteal/internal/seams"
)

// What this package's tests need of its internals.

var LockTTL = lockTTL

const (
	BudgetDefault = budgetDefault
	BudgetMax     = budgetMax
	BudgetMin     = budgetMin
	EveryMax      = everyMax
	AutoEveryMin  = autoEveryMin
)

// Hooked returns cfg with the given roll and clock (nil keeps a default).
func Hooked(cfg Config, roll func() float64, now func() time.Time) Config {
	seams.SetRoll(&cfg, roll, now)
	return cfg
}

const (
	PressureDefault  = pressureDefault
	PressureMaxDelay = pressureMaxDelay
)

// WithPressureRead returns cfg whose pressure gate reads its p99 from read
// instead of the Go scheduler.
func WithPressureRead(cfg Config, read func() (p99 time.Duration, ok bool)) Config {
	seams.SetPressure(&cfg, read)
	return cfg
}

// WithTickDenseGap returns cfg whose schedules count as dense (not every
// process visits every tick) below gap instead of a minute: a test's
// per-second schedule can stand for a per-minute one.
func WithTickDenseGap(cfg Config, gap time.Duration) Config {
	cfg.tickDenseGap = gap
	return cfg
}

var ParseSchedule = func(expr string) (next func(time.Time) time.Time, err error) {
	s, err := schedule.Parse(expr)
	if err != nil {
		return nil, err
	}
	return s.Next, nil
}
