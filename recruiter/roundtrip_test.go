package recruiter_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// TestRoundTripsPerSlice pins the recruiter's own Redis cost under a fixed
// rate: two round trips for a slice (acquire, then release or cooldown),
// one for a skip (the acquire says why and for how long), none for a draw
// that a local gate dismisses.
func TestRoundTripsPerSlice(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	var roll atomic.Value
	roll.Store(0.0)
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "rt"}, func() float64 { return roll.Load().(float64) }, clock.Now))
	counter := &redistest.RoundTrips{}
	b.rdb.AddHook(counter)
	mustRegister(t, b.rec, recruiter.Func("plain", noop), recruiter.JobConfig{Rate: 0.4})
	mustRegister(t, b.rec, recruiter.Func("periodic", noop), recruiter.JobConfig{Rate: 0.4, Every: time.Minute})
	ctx := context.Background()
	// Load the scripts so EVALSHA finds them, as it will in a warm process.
	for _, r := range []float64{0, 0.5} {
		roll.Store(r)
		b.rec.Enlist(ctx)
	}
	clock.Advance(time.Hour)
	b.rdb.Set(ctx, "rt:lock:plain", "another-node", time.Minute)
	roll.Store(0.0)
	b.rec.Enlist(ctx)
	b.rdb.Del(ctx, "rt:lock:plain", "rt:lock:periodic")
	clock.Advance(time.Hour)
	// The recruiter reads the eviction policy once, after its first slice
	// reached Redis: not a round trip of any slice below.
	testrig.Eventually(t, 10*time.Second, "the eviction policy read", func() bool { return b.rec.Stats().EvictionPolicy != "" })

	cost := func(what string, r float64, want int64, prepare func()) {
		t.Helper()
		prepare()
		roll.Store(r)
		before := counter.Load()
		b.rec.Enlist(ctx)
		if got := counter.Load() - before; got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	none := func() {}
	cost("slice, then release", 0, 2, none)
	cost("slice, then cooldown", 0.5, 2, none)
	cost("draw while resting after a slice", 0, 0, none)
	cost("draw while cooling down", 0.5, 0, none)
	cost("skip: lock held elsewhere", 0, 1, func() {
		clock.Advance(time.Hour)
		b.rdb.Set(ctx, "rt:lock:plain", "another-node", time.Minute)
	})
	cost("dismissed draw", 0.99, 0, none)
	if js := jobStats(t, b.rec, "periodic"); js.Ran != 2 || js.SkippedGate != 1 {
		t.Fatalf("periodic stats %+v, want 2 ran and 1 gated", js)
	}
}
