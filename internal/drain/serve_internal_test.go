package drain

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A slice's error is its end only when all it joins is its context's
// error: a Redis call's timeout at the shutdown is a failure to report.
func TestOnlyEnded(t *testing.T) {
	redisErr := errors.New("redis: connection refused")
	wrap := func(err error) error { return fmt.Errorf("jobs: drain: %w", err) }
	for _, c := range []struct {
		name     string
		err, end error
		want     bool
	}{
		{"no error", nil, context.Canceled, false},
		{"not ended", redisErr, nil, false},
		{"canceled", wrap(context.Canceled), context.Canceled, true},
		{"slice's deadline", wrap(context.DeadlineExceeded), context.DeadlineExceeded, true},
		{"canceled and a settle failed", wrap(errors.Join(context.Canceled, redisErr)), context.Canceled, false},
		{"a settle timed out at the shutdown", wrap(context.DeadlineExceeded), context.Canceled, false},
		{"a settle failed at the shutdown", wrap(redisErr), context.Canceled, false},
		{"canceled twice", wrap(errors.Join(context.Canceled, wrap(context.Canceled))), context.Canceled, true},
	} {
		if got := onlyEnded(c.err, c.end); got != c.want {
			t.Errorf("%s: onlyEnded(%v, %v) = %v, want %v", c.name, c.err, c.end, got, c.want)
		}
	}
}
