package recruiter

import "time"

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
	cfg.roll, cfg.now = roll, now
	return cfg
}

const (
	PressureDefault  = pressureDefault
	PressureMaxDelay = pressureMaxDelay
)

// WithPressureRead returns cfg whose pressure gate reads its p99 from read
// instead of the Go scheduler.
func WithPressureRead(cfg Config, read func() (p99 time.Duration, ok bool)) Config {
	cfg.pressureRead = read
	return cfg
}
