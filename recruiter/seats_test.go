package recruiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// TestSlicesBoundRunsAtOnce: five processes, a job with Slices 3 that
// records in Redis how many of its slices run at once, the most it saw,
// and the slices that ran. The lock and its seats must keep that at three,
// and reach it; with Slices 1 the same fleet keeps it at one (the test
// fails if the bound is not kept, or if no seat is ever taken).
func TestSlicesBoundRunsAtOnce(t *testing.T) {
	t.Parallel()
	for _, slices := range []int{1, 3} {
		t.Run(map[int]string{1: "one", 3: "three"}[slices], func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			observer := srv.Client(t)
			const running, most, runs = "st:running", "st:most", "st:runs"
			var recs []*recruiter.Recruiter
			for range 5 {
				rdb := srv.Client(t)
				rec := newRecruiter(t, rdb, recruiter.Config{MaxConcurrent: 2, Prefix: "st"}, nil)
				mustRegister(t, rec, recruiter.Func("side-by-side", func(ctx context.Context) (recruiter.Report, error) {
					keep := context.WithoutCancel(ctx)
					n, err := rdb.Incr(keep, running).Result()
					if err != nil {
						return recruiter.Report{}, err
					}
					rdb.Eval(keep, "if tonumber(redis.call('GET', KEYS[1]) or 0) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end", []string{most}, n)
					rdb.Incr(keep, runs)
					<-ctx.Done() // the whole budget: slices overlap as long as they can
					rdb.Decr(keep, running)
					return recruiter.Report{Items: 1, More: true}, nil
				}), recruiter.JobConfig{Rate: 1, Budget: 100 * time.Millisecond, Slices: slices})
				recs = append(recs, rec)
			}
			enlistFor(3*time.Second, 8, recs...)
			shutdown(t, recs...)
			ctx := context.Background()
			n, _ := observer.Get(ctx, runs).Int()
			m, _ := observer.Get(ctx, most).Int()
			t.Logf("Slices %d: %d slices ran, at most %d at once", slices, n, m)
			if m > slices || m < slices || n < 10 {
				t.Fatalf("Slices %d: at most %d slices ran at once over %d; want exactly %d at most, reached", slices, m, n, slices)
			}
		})
	}
}

// A drain asks for several slices (recruiter.SideBySide); Slices is
// bounded, and a schedule runs one slice per tick.
func TestSlicesConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	job := recruiter.Func("bad-slices", func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, nil })
	for _, cfg := range []recruiter.JobConfig{
		{Every: time.Second, Slices: -1},
		{Every: time.Second, Slices: 65},
		{Schedule: "@hourly", Slices: 2},
	} {
		if err := b.rec.Register(job, cfg); err == nil {
			t.Errorf("Register(%+v): no error", cfg)
		}
	}
}
