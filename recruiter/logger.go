package recruiter

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// Logger returns the logger of the recruiter that runs the slice whose
// context is ctx (its [Config].Logger), so that a job logs where the
// recruiter does; nil for any other context.
func Logger(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey{}).(*slog.Logger)
	return l
}
