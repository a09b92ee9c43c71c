package recruiter_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// TestScheduleCost measures a per-second schedule, no traffic, on 1, 10
// and 100 processes: how late each tick's run began (p50, p99) and the
// fleet's round trips per tick. "every tick" stands for schedules a
// minute or more apart, where every process visits every tick (at most
// one round trip each); "dense" is a per-second schedule as it is, where
// the fleet makes about four visits a tick. BENCHMARKS.md quotes its log
// (go test -count=1 -run TestScheduleCost -v ./recruiter/).
//
// Not parallel with the package's other tests: its figures are lateness.
func TestScheduleCost(t *testing.T) {
	srv := redistest.Start(t)
	const window = 15 * time.Second
	type row struct {
		procs    int
		dense    bool
		late     []time.Duration
		ticks    int
		trips    int64
		runs     int
		distinct int
	}
	var rows []*row
	for _, procs := range []int{1, 10, 100} {
		rows = append(rows, &row{procs: procs})
	}
	rows = append(rows, &row{procs: 100, dense: true})
	var wg sync.WaitGroup
	for i, r := range rows {
		wg.Go(func() {
			rdb := srv.Client(t)
			trips := &redistest.RoundTrips{}
			rdb.AddHook(trips)
			cfg := recruiter.Config{Prefix: fmt.Sprintf("%s-%d", redistest.Prefix(t), i)}
			if !r.dense {
				cfg = recruiter.WithTickDenseGap(cfg, time.Second)
			}
			log := &tickLog{}
			fleetOf(t, rdb, r.procs, cfg, "* * * * * *", log, 0)
			time.Sleep(5 * time.Second) // start-up: the first ticks, the eviction policy's reading
			from, before := time.Now().Truncate(time.Second).Add(time.Second), trips.Load()
			time.Sleep(time.Until(from.Add(window)))
			r.trips = trips.Load() - before
			time.Sleep(1500 * time.Millisecond) // the last tick's run
			runs := log.between(from, from.Add(window))
			seen := map[int64]bool{}
			for _, run := range runs {
				r.late = append(r.late, run.began.Sub(run.tick))
				seen[run.tick.UnixMilli()] = true
			}
			r.ticks, r.runs, r.distinct = int(window/time.Second), len(runs), len(seen)
		})
	}
	wg.Wait()
	for _, r := range rows {
		mode := "every tick"
		if r.dense {
			mode = "dense"
		}
		t.Run(fmt.Sprintf("%d processes, %s", r.procs, mode), func(t *testing.T) {
			slices.Sort(r.late)
			if len(r.late) == 0 {
				t.Fatal("no run")
			}
			p50, p99 := r.late[len(r.late)/2], r.late[(len(r.late)-1)*99/100]
			perTick := float64(r.trips) / float64(r.ticks)
			t.Logf("%d ticks: %d runs (%d distinct); lateness p50 %v, p99 %v; %.2f round trips per tick (%.2f per process)",
				r.ticks, r.runs, r.distinct, p50.Round(time.Millisecond), p99.Round(time.Millisecond), perTick, perTick/float64(r.procs))
			if r.runs != r.distinct {
				t.Errorf("%d runs of %d ticks: a tick ran twice", r.runs, r.distinct)
			}
			if p99 > time.Second {
				t.Errorf("p99 lateness %v, want within a second", p99)
			}
			switch {
			case !r.dense && r.distinct != r.ticks:
				t.Errorf("%d of %d ticks ran, want every one", r.distinct, r.ticks)
			case !r.dense && perTick > 1.1*float64(r.procs)+1:
				t.Errorf("%.2f round trips per tick, want at most one per process (and the runner's rare release)", perTick)
			case r.dense && perTick > 8:
				t.Errorf("%.2f round trips per tick on a dense schedule, want about 4", perTick)
			}
		})
	}
}
