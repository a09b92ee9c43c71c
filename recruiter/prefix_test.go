package recruiter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// Every job of packages jobs and tasks that works a queue is refused by
// a recruiter of another prefix, with both named; under the same prefix
// it is taken. Nothing reaches Redis.
func TestRegisterRefusesAQueueUnderAnotherPrefix(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	type maker func(q *queue.Queue) (recruiter.Job, error)
	ping := tasks.Define[struct{}, struct{}]("ping")
	makers := map[string]maker{
		"Drain": func(q *queue.Queue) (recruiter.Job, error) {
			return jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return nil, nil }, jobs.DrainConfig{})
		},
		"TidyStale":  func(q *queue.Queue) (recruiter.Job, error) { return jobs.TidyStale(q, jobs.TidyConfig{}) },
		"PromoteDue": func(q *queue.Queue) (recruiter.Job, error) { return jobs.PromoteDue(q, jobs.PromoteConfig{}) },
		"QueueDepth": func(q *queue.Queue) (recruiter.Job, error) { return jobs.QueueDepth(q, jobs.DepthConfig{}) },
		"Mux.Job":    func(q *queue.Queue) (recruiter.Job, error) { return tasks.NewMux().Job(q, jobs.DrainConfig{}) },
		"Periodic": func(q *queue.Queue) (recruiter.Job, error) {
			c, err := tasks.NewClient(q)
			if err != nil {
				return nil, err
			}
			return ping.Periodic(c, "ping."+q.Config().Prefix, struct{}{})
		},
	}
	rec := newRecruiter(t, rdb, recruiter.Config{Prefix: "shop"}, nil)
	for name, make := range makers {
		t.Run(name, func(t *testing.T) {
			other, err := queue.New(rdb, "mail", queue.Config{Prefix: "billing"})
			if err != nil {
				t.Fatal(err)
			}
			job, err := make(other)
			if err != nil {
				t.Fatal(err)
			}
			err = rec.Register(job, recruiter.JobConfig{Rate: 0.01})
			if !errors.Is(err, recruiter.ErrInvalidJob) || !strings.Contains(err.Error(), `"billing"`) ||
				!strings.Contains(err.Error(), `"shop"`) || !strings.Contains(err.Error(), "mail") {
				t.Fatalf("Register of %s under prefix billing = %v; want ErrInvalidJob naming both prefixes and the queue", name, err)
			}
			same, err := queue.New(rdb, "mail", queue.Config{Prefix: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			if job, err = make(same); err != nil {
				t.Fatal(err)
			}
			if err := rec.Register(job, recruiter.JobConfig{Rate: 0.01}); err != nil {
				t.Fatalf("Register of %s under the recruiter's prefix = %v", name, err)
			}
		})
	}
	// A job that says nothing of a queue is taken under any prefix.
	mustRegister(t, rec, recruiter.Func("plain", noop), recruiter.JobConfig{Rate: 0.01})
}
