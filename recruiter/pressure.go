package recruiter

import (
	"context"
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// The pressure gate keeps a slice from starting while its process is
// busy: while the 99th percentile of the time its goroutines wait for a
// CPU (the Go scheduler's /sched/latencies:seconds, cumulative, read as
// the difference between two readings) is at least Config.Pressure. That
// is the delay a request's goroutine meets before it runs, in the
// process's own terms: it rises whether the process is saturated by its
// own requests, by other processes on the machine or by a CPU quota. It is
// judged in admit, never on the draw, and re-read at most once per
// pressureInterval, so its cost is bounded by time, not by requests.
const (
	pressureDefault = time.Millisecond
	// Bounds of Config.Pressure: below the lower one a quiet process reads
	// busy (waking an idle thread alone takes 0.1-0.3 ms on a small VM);
	// past the upper one nothing is left to protect.
	pressureMin = 100 * time.Microsecond
	pressureMax = time.Second

	pressureInterval = 100 * time.Millisecond
	// A verdict needs this many sampled scheduling events (the runtime
	// samples one in eight): with fewer, the process is close to idle, and
	// the window grows until it has them, so that one late wake-up is not a
	// p99 of its own.
	pressureMinEvents = 100
	// pressureMaxDelay bounds the delay: a job that pressure has held back
	// this long since it last passed the gate here runs anyway, so sustained
	// load postpones maintenance, never stops it.
	pressureMaxDelay = 10 * time.Second
)

// pressureGate is the process's verdict, shared by its jobs. It is safe for
// concurrent use: one caller re-reads the runtime while the others take
// the cached verdict.
type pressureGate struct {
	threshold time.Duration                       // 0: off
	read      func() (p99 time.Duration, ok bool) // ok is false while the window has too few events

	mu      sync.Mutex   // held by the one caller reading the runtime
	next    atomic.Int64 // unix ns before which the verdict stands
	verdict atomic.Bool  // busy
}

// newPressureGate makes the gate for a validated config: off for a
// negative Pressure, reading the Go scheduler unless a test gave read.
func newPressureGate(threshold time.Duration, read func() (time.Duration, bool)) *pressureGate {
	g := &pressureGate{threshold: max(threshold, 0), read: read}
	if g.read == nil && g.threshold > 0 {
		g.read = newSchedLatency().p99
	}
	return g
}

// busy reports whether the process was busy at its latest reading, taken
// at most pressureInterval before now.
func (g *pressureGate) busy(now time.Time) bool {
	if g.threshold == 0 {
		return false
	}
	if now.UnixNano() < g.next.Load() || !g.mu.TryLock() {
		return g.verdict.Load()
	}
	defer g.mu.Unlock()
	if now.UnixNano() >= g.next.Load() {
		p99, ok := g.read()
		g.verdict.Store(ok && p99 >= g.threshold)
		g.next.Store(now.Add(pressureInterval).UnixNano())
	}
	return g.verdict.Load()
}

// pressed is the gate in admit: it reports whether pressure holds e's
// slice back now, and counts it. The first hold starts e's clock; past
// pressureMaxDelay the slice goes through, and the clock restarts.
func (r *Recruiter) pressed(e *entry, now time.Time) bool {
	if r.pressure.busy(now) && !e.tickOverdue(now) {
		passed := e.pressurePassed.Load()
		if passed == 0 {
			e.pressurePassed.CompareAndSwap(0, now.UnixNano())
			passed = e.pressurePassed.Load()
		}
		if now.UnixNano()-passed < int64(pressureMaxDelay) {
			e.stats.pressured.Add(1)
			return true
		}
	}
	e.pressurePassed.Store(now.UnixNano())
	return false
}

// schedLatency reads the Go scheduler's latency histogram and gives the
// p99 of the events since the previous reading that had enough of them.
// Its buffers are reused: a reading allocates nothing. Not safe for
// concurrent use (the gate's mutex serialises it).
type schedLatency struct {
	sample []metrics.Sample
	prev   []uint64
	delta  []uint64
}

func newSchedLatency() *schedLatency {
	s := &schedLatency{sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := s.sample[0].Value.Float64Histogram()
		s.prev = append([]uint64(nil), h.Counts...)
		s.delta = make([]uint64, len(h.Counts))
	}
	return s
}

func (s *schedLatency) p99() (time.Duration, bool) {
	if s.prev == nil {
		return 0, false // a runtime without the metric: never busy
	}
	metrics.Read(s.sample)
	h := s.sample[0].Value.Float64Histogram()
	if len(h.Counts) != len(s.prev) {
		return 0, false
	}
	var n uint64
	for i, c := range h.Counts {
		s.delta[i] = c - s.prev[i]
		n += s.delta[i]
	}
	if n < pressureMinEvents {
		return 0, false // keep the baseline: the window grows
	}
	copy(s.prev, h.Counts)
	return quantile(s.delta, h.Buckets, n, 0.99), true
}

// quantile is the lower bound of the bucket that holds the q-quantile of
// counts (n in all): busy is said only of latencies surely that long.
func quantile(counts []uint64, buckets []float64, n uint64, q float64) time.Duration {
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			lo := buckets[i] // counts[i] holds [buckets[i], buckets[i+1])
			if lo <= 0 || math.IsInf(lo, 0) {
				return 0
			}
			return time.Duration(min(lo, 3600) * float64(time.Second)) // capped: no overflow from the last bucket
		}
	}
	return 0
}

type gateKey struct{}

// Busy reports whether the process that runs the slice whose context is
// ctx is busy now, as its pressure gate judges ([Config].Pressure): a job
// that works item by item checks it between items and ends its slice
// early, leaving the rest for later, so that stolen work yields to the
// process's requests once started as well as before (jobs.Drain does).
// The verdict is cached (re-read at most every 100ms): a few nanoseconds.
// False for any other context, and with the gate off.
func Busy(ctx context.Context) bool {
	g, ok := ctx.Value(gateKey{}).(*pressureGate)
	return ok && g.busy(time.Now())
}
