package jobs

import "github.com/worksteal/worksteal/internal/drain"

// Errors of this package. Those about a config or an argument wrap a
// message naming the field or argument. A [Drain] made by
// [github.com/worksteal/worksteal/tasks.Mux.Job] returns them too.
var (
	ErrInvalidConfig   error = drain.ErrInvalidConfig
	ErrInvalidArgument error = drain.ErrInvalidArgument
	ErrHandlerPanic    error = drain.ErrHandlerPanic
)
