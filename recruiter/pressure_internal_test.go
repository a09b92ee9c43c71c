package recruiter

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestPressureDefaultsOn(t *testing.T) {
	t.Parallel()
	if got := (Config{}).withDefaults().Pressure; got != pressureDefault || pressureDefault != time.Millisecond {
		t.Fatalf("zero Pressure becomes %v (default %v), want the documented 1ms", got, pressureDefault)
	}
	if g := newPressureGate(-1, nil); g.threshold != 0 || g.read != nil || g.busy(time.Now()) {
		t.Fatalf("a negative Pressure must turn the gate off without reading the runtime: %+v", g)
	}
}

func TestQuantileIsTheBucketsLowerBound(t *testing.T) {
	t.Parallel()
	buckets := []float64{math.Inf(-1), 0, 1e-4, 1e-3, 1e-2, math.Inf(1)}
	for _, tc := range []struct {
		counts []uint64
		want   time.Duration
	}{
		{[]uint64{0, 100, 0, 0, 0}, 0},
		{[]uint64{0, 99, 1, 0, 0}, 0},                      // p99 is the 99th of 100: still in [0, 100µs)
		{[]uint64{0, 98, 2, 0, 0}, 100 * time.Microsecond}, // now in [100µs, 1ms)
		{[]uint64{0, 0, 0, 5, 0}, time.Millisecond},
		{[]uint64{0, 0, 0, 0, 7}, 10 * time.Millisecond},
		{[]uint64{3, 0, 0, 0, 0}, 0}, // -Inf lower bound
	} {
		var n uint64
		for _, c := range tc.counts {
			n += c
		}
		if got := quantile(tc.counts, buckets, n, 0.99); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
}

// pingPong makes n scheduling events: goroutines woken by a channel.
func pingPong(n int) {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	for range n {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
}

// TestSchedLatencyReadsTheRuntime: the real reading judges only windows
// with enough events, reads without allocating, and reads busy when the
// process is saturated: more goroutines spinning than GOMAXPROCS, so a
// woken goroutine waits for a P for up to a scheduler time slice (10ms).
func TestSchedLatencyReadsTheRuntime(t *testing.T) {
	// Not parallel: it saturates the process on purpose.
	s := newSchedLatency()
	if s.prev == nil {
		t.Fatal("no /sched/latencies:seconds in this runtime")
	}
	pingPong(10 * 8 * pressureMinEvents) // the runtime samples one event in eight
	if _, ok := s.p99(); !ok {
		t.Fatal("no verdict after enough events")
	}
	if allocs := testing.AllocsPerRun(100, func() { s.p99() }); allocs != 0 {
		t.Errorf("a reading allocates %v times, want 0", allocs)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					_ = i * i
				}
			}
		})
	}
	s.p99() // a fresh window
	deadline := time.Now().Add(20 * time.Second)
	var p99 time.Duration
	for {
		pingPong(8 * pressureMinEvents)
		var ok bool
		if p99, ok = s.p99(); ok && p99 >= pressureDefault || time.Now().After(deadline) {
			break
		}
	}
	close(stop)
	wg.Wait()
	if p99 < pressureDefault {
		t.Fatalf("saturated process: p99 scheduling latency %v, want at least the default threshold %v", p99, pressureDefault)
	}
}

// BenchmarkPressure: what the gate costs a slice about to start: the
// cached verdict (all but one call per 100ms) and a reading of the runtime
// (at most one per 100ms).
func BenchmarkPressure(b *testing.B) {
	b.Run("cached", func(b *testing.B) {
		g := newPressureGate(pressureDefault, nil)
		now := time.Now()
		g.busy(now)
		b.ReportAllocs()
		for b.Loop() {
			g.busy(now)
		}
	})
	b.Run("read", func(b *testing.B) {
		s := newSchedLatency()
		b.ReportAllocs()
		for b.Loop() {
			s.prev[0]-- // force a verdict's bookkeeping even without new events
			s.p99()
		}
	})
}
