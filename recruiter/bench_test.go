package recruiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// BenchmarkDraw is the hot path: the roll a middleware takes before every
// request. "dismissed" rolls past every job; "rate-1pct" uses the default
// random source with one job at 1%, as a real service would.
func BenchmarkDraw(b *testing.B) {
	rdb := redistest.Start(b).Client(b)
	bench := func(name string, cfg recruiter.Config, rates ...float64) {
		b.Run(name, func(b *testing.B) {
			rec, err := recruiter.New(rdb, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer rec.Shutdown(context.Background())
			for i, rate := range rates {
				if err := rec.Register(recruiter.Func("job"+string(rune('a'+i)), noop), recruiter.JobConfig{Rate: rate}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if d := rec.Draw(); d.Recruited() && d.Job() == "" {
						b.Fatal("recruited without a job")
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if d := rec.Draw(); d.Recruited() && d.Job() == "" {
							b.Fatal("recruited without a job")
						}
					}
				})
			})
		})
	}
	// Worst case: every roll draws a job that is cooling off locally (it
	// ran, and its Every has not passed), so every draw is gated: at a
	// fixed rate, and paced automatically (which counts its dismissed
	// draws, and takes in their rate every 32).
	cooling := func(name string, cfg recruiter.JobConfig) {
		b.Run(name, func(b *testing.B) {
			rec, err := recruiter.New(rdb, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "bench-" + name}, fixedRoll(0), nil))
			if err != nil {
				b.Fatal(err)
			}
			defer rec.Shutdown(context.Background())
			if err := rec.Register(recruiter.Func("hourly", noop), cfg); err != nil {
				b.Fatal(err)
			}
			rec.Enlist(context.Background()) // runs it, or meets its cooldown from an earlier round
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if rec.Draw().Recruited() {
						b.Fatal("a job cooling off was recruited")
					}
				}
			})
		})
	}
	cooling("drawn-cooling-off", recruiter.JobConfig{Rate: 1, Every: time.Hour})
	cooling("drawn-cooling-off-auto", recruiter.JobConfig{Every: time.Hour})
	bench("dismissed", recruiter.Hooked(recruiter.Config{}, fixedRoll(0.99), nil), 0.01, 0.001)
	bench("rate-1pct", recruiter.Config{}, 0.01)
	bench("four-jobs", recruiter.Config{}, 0.01, 0.005, 0.002, 0.001)
}

// BenchmarkSlice runs whole recruitments of a job that does nothing, so
// what is measured is the recruiter itself: from Enlist to the job's start
// ("start-ns") and to the end of the slice (ns/op), with the Redis round
// trips of each slice counted.
func BenchmarkSlice(b *testing.B) {
	for _, mode := range []struct {
		name   string
		inline bool
	}{{"inline", true}, {"background", false}} {
		b.Run(mode.name, func(b *testing.B) {
			srv := redistest.Start(b)
			rdb := srv.Client(b)
			counter := &redistest.RoundTrips{}
			rdb.AddHook(counter)
			rec, err := recruiter.New(rdb, recruiter.Hooked(recruiter.Config{Inline: mode.inline}, fixedRoll(0), nil))
			if err != nil {
				b.Fatal(err)
			}
			started, ended := make(chan time.Time, 1), make(chan struct{}, 1)
			// More: release the lock at once, so the next enlistment runs too.
			rec.Register(recruiter.Func("noop", func(context.Context) (recruiter.Report, error) {
				started <- time.Now()
				return recruiter.Report{More: true}, nil
			}), recruiter.JobConfig{Rate: 1})
			rec.Enlist(context.Background()) // load the scripts
			<-started
			waitIdle(rec)
			before := counter.Load()
			var toStart time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				rec.Enlist(context.Background())
				toStart += (<-started).Sub(t0)
				waitIdle(rec)
			}
			b.StopTimer()
			close(ended)
			if js := jobStats(nil, rec, "noop"); js.Ran != uint64(b.N)+1 {
				b.Fatalf("%d of %d enlistments ran", js.Ran-1, b.N)
			}
			b.ReportMetric(float64(toStart.Nanoseconds())/float64(b.N), "start-ns")
			b.ReportMetric(float64(counter.Load()-before)/float64(b.N), "roundtrips/slice")
			rec.Shutdown(context.Background())
		})
	}
}

// waitIdle waits for the background slice to release its slot.
func waitIdle(rec *recruiter.Recruiter) {
	for rec.Stats().InFlight != 0 {
		time.Sleep(time.Microsecond)
	}
}
