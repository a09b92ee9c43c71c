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
	// pressureHoldMin is the first hold of a job whose slice left its
	// process busy; each such slice in a row doubles it, up to
	// pressureMaxDelay.
	pressureHoldMin = 100 * time.Millisecond
	// pressureJudgeWithin is how soon after a slice's end a reading must
	// come to judge the slice.
	pressureJudgeWithin = time.Second
	// pressureCrowdedWindow is the longest window of a busy reading that
	// counts as crowded: 100 sampled events in 500ms are 1,600 scheduling
	// events a second, a few hundred requests' worth.
	pressureCrowdedWindow = 500 * time.Millisecond
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
	// judged is the latest reading that had enough events to judge: its
	// unix ns, bit 0 set if it read busy and bit 1 if its window was
	// dense (one word, so that the time and the verdicts are read
	// together); 0 if none yet. A dense window is at most
	// pressureCrowdedWindow long: a process with that many events is
	// serving requests, whose latency a slice's hold protects; one whose
	// slices alone make it busy, at low traffic, has few requests to
	// protect and work to do, and its readings say nothing of the hold.
	// Crowded is busy over a dense window.
	judged    atomic.Int64
	crowdedAt atomic.Int64 // unix ns of the latest reading that judged the process crowded; 0 if none
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
		g.take(now)
	}
	return g.verdict.Load()
}

// readNow reads the runtime now, whatever the cached verdict's age: at
// the end of a slice, so that the slice is judged by the window it ran in.
// It returns the reading's judged word (0 if its window had too few
// events to judge: then the verdict and the next reading stand).
func (g *pressureGate) readNow(now time.Time) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	p99, ok := g.read()
	if !ok {
		return 0
	}
	return g.judge(now, p99 >= g.threshold)
}

// take is the reading due at now; the caller holds g.mu. Too few events
// to judge read as calm: the process is close to idle.
func (g *pressureGate) take(now time.Time) {
	p99, ok := g.read()
	if ok {
		g.judge(now, p99 >= g.threshold)
		return
	}
	g.verdict.Store(false)
	g.next.Store(now.Add(pressureInterval).UnixNano())
}

// judge records a reading that had enough events and returns its judged
// word; the caller holds g.mu.
func (g *pressureGate) judge(now time.Time, busy bool) (judged int64) {
	g.verdict.Store(busy)
	previous := g.judged.Load() &^ judgedBits
	judged = now.UnixNano() &^ judgedBits
	if previous != 0 && judged-previous <= int64(pressureCrowdedWindow) {
		judged |= judgedDense
	}
	if busy {
		judged |= judgedBusy
	}
	if judged&judgedBits == judgedBits {
		g.crowdedAt.Store(now.UnixNano())
	}
	g.judged.Store(judged)
	g.next.Store(now.Add(pressureInterval).UnixNano())
	return judged
}

// The low bits of pressureGate.judged.
const (
	judgedBusy  = 1
	judgedDense = 2
	judgedBits  = judgedBusy | judgedDense
)

// pressed is the gate in admit: it reports whether pressure holds e's
// slice back now, the process's or the hold its own last slices earned
// (weigh), and counts it. The first hold starts e's clock; past
// pressureMaxDelay the slice goes through, and the clock restarts.
func (r *Recruiter) pressed(e *entry, now time.Time) bool {
	busy := r.pressure.busy(now)
	r.weighEnded(e, now)
	if busy || now.UnixNano() < e.pressureHeldUntil.Load() {
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

// sliceEnded is called at the end of each slice of e that ran, begun at
// began. A slice during which the gate read crowded (and, like a drain's,
// perhaps yielded) left its process so; otherwise the gate reads the
// process afresh, and the slice is weighed by that reading or, if its
// window had too few events to judge, by the first later one that has
// enough (weighEnded, in admit).
func (r *Recruiter) sliceEnded(e *entry, began, now time.Time) {
	if r.pressure.threshold == 0 {
		return
	}
	if r.pressure.crowdedAt.Load() >= began.UnixNano() {
		e.pressureEnded.Store(0)
		r.weigh(e, true, now)
		return
	}
	if judged := r.pressure.readNow(now); judged != 0 {
		e.pressureEnded.Store(0)
		r.weighJudged(e, judged, now)
		return
	}
	e.pressureEnded.Store(now.UnixNano())
}

// weighJudged weighs e's last slice by a reading's judged word: a reading
// over a window that was not dense says nothing of it.
func (r *Recruiter) weighJudged(e *entry, judged int64, now time.Time) {
	if judged&judgedDense != 0 {
		r.weigh(e, judged&judgedBusy != 0, now)
	}
}

// weighEnded weighs e's last slice if a reading has judged the process
// since it ended, soon enough to be the slice's doing.
func (r *Recruiter) weighEnded(e *entry, now time.Time) {
	ended := e.pressureEnded.Load()
	if ended == 0 {
		return
	}
	judged := r.pressure.judged.Load()
	at := judged &^ judgedBits
	if at <= ended || !e.pressureEnded.CompareAndSwap(ended, 0) || at-ended > int64(pressureJudgeWithin) {
		return
	}
	r.weighJudged(e, judged, now)
}

// weigh takes in whether e's last slice left its process crowded. The gate
// alone lets a slice that burns CPU start whenever the process is calm,
// which the slice itself then ends: the process's requests wait behind
// it, the gate closes until they catch up, opens again, and the cycle
// repeats as long as the job has work. So a slice that leaves its process
// crowded holds its job back for a while, twice as long after each such
// slice in a row; one that leaves it calm, with events as dense, halves
// the hold. A job whose slices do not weigh on the process is never held;
// in a process with few events (low traffic), the hold stands as it is
// until traffic returns.
func (r *Recruiter) weigh(e *entry, crowded bool, now time.Time) {
	hold := time.Duration(e.pressureHold.Load())
	if crowded {
		hold = min(max(2*hold, pressureHoldMin), pressureMaxDelay)
		e.pressureHeldUntil.Store(now.Add(hold).UnixNano())
	} else if hold /= 2; hold < pressureHoldMin {
		hold = 0
	}
	e.pressureHold.Store(int64(hold))
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
