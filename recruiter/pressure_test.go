package recruiter_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// fakePressure is the pressure gate's reading under the test's control:
// the p99 it reports, and how often it was read.
type fakePressure struct {
	p99   atomic.Int64
	reads atomic.Int32
}

func (f *fakePressure) set(d time.Duration) { f.p99.Store(int64(d)) }

func (f *fakePressure) read() (time.Duration, bool) {
	f.reads.Add(1)
	return time.Duration(f.p99.Load()), true
}

// pressureBundle: a recruiter on a real Redis, inline, every roll drawing
// job "chore", a hand-moved clock, a fake reading and a round-trip count.
type pressureBundle struct {
	*bundle
	clock    *manualClock
	pressure *fakePressure
	trips    *redistest.RoundTrips
	runs     *atomic.Int32
}

func setupPressure(t *testing.T, cfg recruiter.Config) *pressureBundle {
	t.Helper()
	p := &pressureBundle{clock: newManualClock(), pressure: &fakePressure{}, trips: &redistest.RoundTrips{}, runs: &atomic.Int32{}}
	cfg.Inline = true
	cfg.Pressure = cmp.Or(cfg.Pressure, recruiter.PressureDefault) // setup turns a zero off
	cfg = recruiter.WithPressureRead(recruiter.Hooked(cfg, fixedRoll(0), p.clock.Now), p.pressure.read)
	p.bundle = setup(t, cfg)
	p.rdb.AddHook(p.trips)
	mustRegister(t, p.rec, recruiter.Func("chore", func(context.Context) (recruiter.Report, error) {
		p.runs.Add(1)
		return recruiter.Report{Items: 1, More: true}, nil // More: no rest, so each enlistment may run
	}), recruiter.JobConfig{Rate: 1})
	return p
}

// TestPressureHoldsSlicesBack: while the process reads busy, a drawn slice
// does not start, makes no Redis call and is counted; once the pressure is
// gone (at the next reading, 100ms on), the job runs as usual.
func TestPressureHoldsSlicesBack(t *testing.T) {
	t.Parallel()
	p := setupPressure(t, recruiter.Config{})
	ctx := context.Background()
	p.pressure.set(5 * time.Millisecond) // above the 1ms default
	for range 20 {
		p.rec.Enlist(ctx)
		p.clock.Advance(30 * time.Millisecond)
	}
	if n := p.runs.Load(); n != 0 {
		t.Fatalf("%d slices ran under pressure, want 0", n)
	}
	if n := p.trips.Load(); n != 0 {
		t.Fatalf("%d Redis round trips under pressure, want 0", n)
	}
	js := jobStats(t, p.rec, "chore")
	if js.Pressured != 20 || js.SkippedGate != 20 || js.Drawn != 20 || js.Ran != 0 {
		t.Fatalf("stats %+v: want 20 drawn, 20 pressured (within SkippedGate), none ran", js)
	}
	// 20 draws 30ms apart: the runtime was read at 0, 120, 240, 360 and
	// 480ms, once per 100ms at most, not once per draw.
	if reads := p.pressure.reads.Load(); reads != 5 {
		t.Fatalf("the gate read the runtime %d times for 20 draws over 600ms, want 5", reads)
	}

	p.rec.Enlist(ctx)                      // read at 600ms: still busy
	p.pressure.set(999 * time.Microsecond) // just below the threshold
	p.clock.Advance(99 * time.Millisecond)
	p.rec.Enlist(ctx) // the verdict of 99ms ago stands
	if n := p.runs.Load(); n != 0 {
		t.Fatalf("a slice ran on a cached busy verdict")
	}
	p.clock.Advance(time.Millisecond)
	p.rec.Enlist(ctx)
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("%d slices ran once the pressure was gone, want 1", n)
	}
	if n := p.trips.Load(); n == 0 {
		t.Fatalf("the slice that ran made no Redis call: the count is broken")
	}
	if js := jobStats(t, p.rec, "chore"); js.Pressured != 22 || js.Ran != 1 || p.pressure.reads.Load() != 7 {
		t.Fatalf("stats %+v after %d readings: want 22 pressured, 1 ran, 7 readings", js, p.pressure.reads.Load())
	}
}

// TestPressureThresholdIsTheSetting: the gate compares the reading with
// Config.Pressure, not the default.
func TestPressureThresholdIsTheSetting(t *testing.T) {
	t.Parallel()
	p := setupPressure(t, recruiter.Config{Pressure: 10 * time.Millisecond})
	p.pressure.set(5 * time.Millisecond) // busy by the default, not by this setting
	p.rec.Enlist(context.Background())
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("%d slices ran at p99 5ms with Pressure 10ms, want 1", n)
	}
	p.pressure.set(10 * time.Millisecond)
	p.clock.Advance(100 * time.Millisecond)
	p.rec.Enlist(context.Background())
	if n, js := p.runs.Load(), jobStats(t, p.rec, "chore"); n != 1 || js.Pressured != 1 {
		t.Fatalf("at p99 = Pressure: %d ran, %d pressured; want the slice held back", n, js.Pressured)
	}
}

// TestPressureOff: a negative Pressure turns the gate off: slices run
// under any reading, and the runtime is not even read.
func TestPressureOff(t *testing.T) {
	t.Parallel()
	p := setupPressure(t, recruiter.Config{Pressure: -1})
	p.pressure.set(time.Hour)
	for range 3 {
		p.rec.Enlist(context.Background())
		p.clock.Advance(time.Second)
	}
	if n := p.runs.Load(); n != 3 {
		t.Fatalf("%d of 3 slices ran with the gate off, want 3", n)
	}
	if js := jobStats(t, p.rec, "chore"); js.Pressured != 0 || p.pressure.reads.Load() != 0 {
		t.Fatalf("gate off: %d pressured, %d readings; want none", js.Pressured, p.pressure.reads.Load())
	}
}

// TestPressureDelaysNeverStarves: under sustained pressure a job runs once
// it has been held back for PressureMaxDelay since it last passed the gate,
// then waits as long again: maintenance is postponed, never stopped.
func TestPressureDelaysNeverStarves(t *testing.T) {
	t.Parallel()
	p := setupPressure(t, recruiter.Config{})
	p.pressure.set(time.Second)
	ctx := context.Background()
	step := recruiter.PressureMaxDelay / 10
	ranAt := []int{}
	for i := range 25 {
		p.rec.Enlist(ctx)
		if int(p.runs.Load()) > len(ranAt) {
			ranAt = append(ranAt, i)
		}
		p.clock.Advance(step)
	}
	// Held first at step 0: runs at step 10 (the delay reached), then at 20.
	if len(ranAt) != 2 || ranAt[0] != 10 || ranAt[1] != 20 {
		t.Fatalf("under sustained pressure the job ran at steps %v of %v, want [10 20]", ranAt, step)
	}
	if js := jobStats(t, p.rec, "chore"); js.Pressured != 23 || js.Ran != 2 {
		t.Fatalf("stats %+v: want 23 pressured and 2 ran", js)
	}
}

// TestPressureInBackground: in background mode the gate is judged on the
// slice's own goroutine once the request has ended; a held-back slice
// frees its slot and is counted.
func TestPressureInBackground(t *testing.T) {
	t.Parallel()
	fake := &fakePressure{}
	fake.set(time.Second)
	b := setup(t, recruiter.WithPressureRead(recruiter.Hooked(recruiter.Config{Pressure: recruiter.PressureDefault}, fixedRoll(0), nil), fake.read))
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("bg", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	ctx, cancel := context.WithCancel(context.Background())
	d := b.rec.Draw()
	d.Enlist(d.Context(ctx), nil)
	cancel() // the request ends: the slice goes to the gate
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := b.rec.Stats()
		if st.Jobs[0].Pressured == 1 && st.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pressured slice after 10s: %+v", st.Jobs[0])
		}
		time.Sleep(time.Millisecond)
	}
	if runs.Load() != 0 {
		t.Fatalf("a slice ran under pressure")
	}
}

func TestPressureBounds(t *testing.T) {
	t.Parallel()
	rdb := offlineClient(t)
	for _, tc := range []struct {
		pressure time.Duration
		ok       bool
	}{
		{0, true}, {-1, true}, {-time.Hour, true},
		{100 * time.Microsecond, true}, {time.Second, true},
		{100*time.Microsecond - 1, false}, {time.Second + 1, false},
	} {
		rec, err := recruiter.New(rdb, recruiter.Config{Pressure: tc.pressure})
		switch {
		case tc.ok && err != nil:
			t.Errorf("Pressure %v refused: %v", tc.pressure, err)
		case !tc.ok && (!errors.Is(err, recruiter.ErrInvalidConfig) || !strings.Contains(err.Error(), "Pressure")):
			t.Errorf("Pressure %v: err %v, want ErrInvalidConfig naming Pressure", tc.pressure, err)
		}
		if rec != nil {
			if err := rec.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}
	}
}

// TestPressureHoldsTheTimerBack: a busy process's pace timer does not spin
// on a due job that the pressure gate holds back: it tries again
// timerRetry later, not at once (each try would start a goroutine and
// count a pressured slice), and the job runs once the pressure is gone.
func TestPressureHoldsTheTimerBack(t *testing.T) {
	t.Parallel()
	pressure := &fakePressure{}
	pressure.set(5 * time.Millisecond) // busy, and stays so
	b := setup(t, recruiter.WithPressureRead(recruiter.Config{Pressure: recruiter.PressureDefault}, pressure.read))
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("chore", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{Items: 1}, nil
	}), recruiter.JobConfig{Every: 50 * time.Millisecond})
	const window = time.Second
	time.Sleep(window) // a span in which a spinning timer would try thousands of times: not a wait for an event
	js := jobStats(t, b.rec, "chore")
	if limit := uint64(window/(100*time.Millisecond)) + 3; js.Pressured > limit || js.Timed > limit {
		t.Errorf("stats %+v: the timer tried %d times in %v under pressure, want at most %d (once per 100ms)", js, js.Timed, window, limit)
	}
	if js.Pressured == 0 || runs.Load() != 0 {
		t.Errorf("stats %+v, %d runs: want the timer's slices held back, none run", js, runs.Load())
	}
	pressure.set(0)
	testrig.Eventually(t, 10*time.Second, "the job runs once the pressure is gone", func() bool { return runs.Load() > 0 })
}
