package recruiter_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/worksteal/worksteal/recruiter"
)

// A slice's context carries its recruiter's logger, and no other context
// does.
func TestLoggerInTheSlicesContext(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Logger: logger}, fixedRoll(0), nil))
	got := make(chan *slog.Logger, 1)
	mustRegister(t, b.rec, recruiter.Func("logs", func(ctx context.Context) (recruiter.Report, error) {
		got <- recruiter.Logger(ctx)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	b.rec.Enlist(context.Background())
	select {
	case l := <-got:
		if l != logger {
			t.Errorf("Logger(slice's ctx) = %p, want the Config's %p", l, logger)
		}
	default:
		t.Fatal("the job did not run at the enlistment")
	}
	if l := recruiter.Logger(context.Background()); l != nil {
		t.Errorf("Logger(context.Background()) = %v, want nil", l)
	}
}
