package jobs_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// The exact bounds, which config_test.go covers only from afar: each limit
// is accepted, one step past it is refused naming the field.
func TestConfigBoundsAreExact(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	q := newQueue(t, rdb, "bounds", queue.Config{})
	tidy := func(c jobs.TidyConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.TidyStale(q, c) }
	}
	drain := func(c jobs.DrainConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.Drain(q, nopHandler, c) }
	}
	members := func(c jobs.EvictConfig) func() (recruiter.Job, error) {
		return func() (recruiter.Job, error) { return jobs.EvictExpiredMembers(rdb, "k", c) }
	}
	for _, tc := range []struct {
		field      string
		ok, refuse func() (recruiter.Job, error)
	}{
		{"Batch", tidy(jobs.TidyConfig{Batching: jobs.Batching{Batch: queue.BatchMax}}), tidy(jobs.TidyConfig{Batching: jobs.Batching{Batch: queue.BatchMax + 1}})},
		{"Batch", drain(jobs.DrainConfig{Batching: jobs.Batching{Batch: 1}}), drain(jobs.DrainConfig{Batching: jobs.Batching{Batch: math.MinInt}})},
		{"MaxBatches", drain(jobs.DrainConfig{Batching: jobs.Batching{MaxBatches: math.MaxInt}}), drain(jobs.DrainConfig{Batching: jobs.Batching{MaxBatches: math.MinInt}})},
		{"RedisTimeout", tidy(jobs.TidyConfig{Batching: jobs.Batching{RedisTimeout: 10 * time.Second}}), tidy(jobs.TidyConfig{Batching: jobs.Batching{RedisTimeout: 10*time.Second + 1}})},
		{"RedisTimeout", drain(jobs.DrainConfig{Batching: jobs.Batching{RedisTimeout: time.Millisecond}}), drain(jobs.DrainConfig{Batching: jobs.Batching{RedisTimeout: time.Millisecond - 1}})},
		{"ScoreUnit", members(jobs.EvictConfig{ScoreUnit: time.Hour}), members(jobs.EvictConfig{ScoreUnit: time.Millisecond - 1})},
		{"ScoreUnit", members(jobs.EvictConfig{ScoreUnit: time.Second}), members(jobs.EvictConfig{ScoreUnit: math.MinInt64})},
		{"Name", tidy(jobs.TidyConfig{Batching: jobs.Batching{Name: strings.Repeat("n", 128)}}), tidy(jobs.TidyConfig{Batching: jobs.Batching{Name: "x}:lock:{y"}})},
		{"Name", members(jobs.EvictConfig{Batching: jobs.Batching{Name: "a.b_c-d"}}), members(jobs.EvictConfig{Batching: jobs.Batching{Name: "*"}})},
	} {
		if job, err := tc.ok(); err != nil || job == nil {
			t.Errorf("%s at its bound: %v, %v; want a job", tc.field, job, err)
		}
		job, err := tc.refuse()
		if job != nil || !errors.Is(err, jobs.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s past its bound: %v, %v; want ErrInvalidConfig naming it", tc.field, job, err)
		}
	}
}
