package jobs

import "github.com/worksteal/worksteal/internal/drain"

// Errors of this package. Those about a config or an argument wrap a
// message naming the field or argument. [github.com/worksteal/worksteal/tasks.Mux.Job]
// returns them too, for the Drain it makes.
var (
	ErrInvalidConfig   = drain.ErrInvalidConfig
	ErrInvalidArgument = drain.ErrInvalidArgument
	ErrHandlerPanic    = drain.ErrHandlerPanic
)
