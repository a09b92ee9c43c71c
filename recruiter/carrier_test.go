package recruiter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// TestCarrierRunsTheSlotsLeft: a quiet fleet of 10 processes with three
// automatically paced jobs. The oldest process carries every job, but its
// visit comes after the random ones aimed at the slot's start, so it runs
// the slots they left (about e^-1.5 = 22 %) and its share of the rest:
// about 30 % of each job's runs over 100 slots, at most 45 %. A carrier
// that visited at the slot's start with the random visits ran about half
// of them (48-60 % measured).
func TestCarrierRunsTheSlotsLeft(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const (
		n     = 10
		every = 200 * time.Millisecond
	)
	jobs := []string{"alpha", "beta", "gamma"}
	var (
		mu       sync.Mutex
		measure  bool
		runs     = map[string][]int{}
		totalRun = map[string]int{}
	)
	for _, name := range jobs {
		runs[name] = make([]int, n)
	}
	cfg := recruiter.Config{Prefix: redistest.Prefix(t)}
	for i := range n {
		rec := newRecruiter(t, rdb, cfg, nil)
		for _, name := range jobs {
			mustRegister(t, rec, recruiter.Func(name, func(context.Context) (recruiter.Report, error) {
				mu.Lock()
				if measure {
					runs[name][i]++
					totalRun[name]++
				}
				mu.Unlock()
				return recruiter.Report{Items: 1}, nil
			}), recruiter.JobConfig{Every: every, Budget: 5 * time.Millisecond})
		}
		time.Sleep(2 * time.Millisecond) // distinct starts, oldest first
	}
	time.Sleep(20 * every) // the count settles (a span, not a wait for an event)
	mu.Lock()
	measure = true
	mu.Unlock()
	time.Sleep(100 * every)
	mu.Lock()
	defer mu.Unlock()
	for _, name := range jobs {
		most, who := 0, 0
		for i, c := range runs[name] {
			if c > most {
				most, who = c, i
			}
		}
		share := float64(most) / float64(max(totalRun[name], 1))
		t.Logf("%s: runs per process %v (of %d)", name, runs[name], totalRun[name])
		if share > 0.45 {
			t.Errorf("%s: process %d ran %s of the job's %d runs; a fleet of %d should spread them (about %.0f%% each)",
				name, who, fmt.Sprintf("%.0f%%", 100*share), totalRun[name], n, 100.0/n)
		}
	}
}
