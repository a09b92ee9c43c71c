package recruiter_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// TestPauseIsFleetWide: a pause from one process stops the job in every
// process at once (no slice starts after Pause returns), each learns it on
// its next visit (skipped_paused), and a Resume brings the job back within
// one Every, for an automatically paced job and for a fixed rate.
func TestPauseIsFleetWide(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  recruiter.JobConfig
	}{
		{"automatic", recruiter.JobConfig{Every: 100 * time.Millisecond}},
		{"fixed rate", recruiter.JobConfig{Rate: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, recruiter.Config{Inline: true})
			var runs atomic.Int64
			job := recruiter.Func("chore", func(context.Context) (recruiter.Report, error) {
				runs.Add(1)
				return recruiter.Report{}, nil
			})
			recs := []*recruiter.Recruiter{b.rec}
			for range 2 {
				recs = append(recs, newRecruiter(t, b.rdb, recruiter.Config{Inline: true, Prefix: "test-" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())}, nil))
			}
			for _, rec := range recs {
				mustRegister(t, rec, job, c.cfg)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; ctx.Err() == nil; i++ {
					recs[i%len(recs)].Enlist(ctx)
					time.Sleep(time.Millisecond)
				}
			}()
			defer func() { cancel(); <-done }()
			testrig.Eventually(t, 10*time.Second, "the job running", func() bool { return runs.Load() >= 3 })

			if err := recs[1].Pause(context.Background(), "chore", time.Hour); err != nil {
				t.Fatal(err)
			}
			// A slice that took the lock before the pause may still end; none starts after.
			time.Sleep(50 * time.Millisecond)
			paused := runs.Load()
			time.Sleep(1500 * time.Millisecond)
			if got := runs.Load(); got != paused {
				t.Fatalf("%d slices started while the job was paused", got-paused)
			}
			for i, rec := range recs {
				if js := jobStats(t, rec, "chore"); !js.Paused(time.Now()) || i != 1 && js.SkippedPaused == 0 {
					t.Errorf("recruiter %d: %+v; want paused, learnt on a visit (skipped_paused)", i, js)
				}
			}

			if err := recs[2].Resume(context.Background(), "chore"); err != nil {
				t.Fatal(err)
			}
			resumed := time.Now()
			testrig.Eventually(t, 10*time.Second, "the job running again in every process", func() bool {
				for _, rec := range recs {
					if jobStats(t, rec, "chore").Paused(time.Now()) {
						return false
					}
				}
				return runs.Load() > paused
			})
			t.Logf("after Resume, running again everywhere in %v", time.Since(resumed).Round(time.Millisecond))
		})
	}
}

// TestPauseRejectsBadInput: an unknown job, a non-positive or absurd
// duration and a nil context are clear errors that touch nothing.
func TestPauseRejectsBadInput(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Config{}, nil)
	mustRegister(t, rec, recruiter.Func("chore", noop), recruiter.JobConfig{Every: time.Second})
	ctx := context.Background()
	if err := rec.Pause(ctx, "nope", time.Minute); !errors.Is(err, recruiter.ErrUnknownJob) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Pause(unknown job) = %v; want ErrUnknownJob naming it", err)
	}
	if err := rec.Resume(ctx, "nope"); !errors.Is(err, recruiter.ErrUnknownJob) {
		t.Errorf("Resume(unknown job) = %v; want ErrUnknownJob", err)
	}
	for _, d := range []time.Duration{0, -time.Second, 31 * 24 * time.Hour} {
		if err := rec.Pause(ctx, "chore", d); err == nil || !strings.Contains(err.Error(), "duration") {
			t.Errorf("Pause(%v) = %v; want an error about the duration", d, err)
		}
	}
	//lint:ignore SA1012 a nil context is the misuse under test
	if err := rec.Pause(nil, "chore", time.Minute); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Pause(nil context) = %v; want an error", err)
	}
}
