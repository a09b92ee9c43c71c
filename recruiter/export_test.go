package recruiter

import "time"

// What this package's tests need of its internals.

var LockTTL = lockTTL

const (
	BudgetDefault = budgetDefault
	BudgetMax     = budgetMax
	BudgetMin     = budgetMin
	EveryMax      = everyMax
)

// Hooked returns cfg with the given roll and clock (nil keeps a default).
func Hooked(cfg Config, roll func() float64, now func() time.Time) Config {
	cfg.roll, cfg.now = roll, now
	return cfg
}
