package recruiter

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/internal/worksqueue"
)

// Recruiter holds jobs and recruits workers for their slices. It is safe
// for concurrent use; create one per process with [New].
type Recruiter struct {
	cfg     Config
	now     func() time.Time // the test seam's, or a cheaper reading of the monotonic clock
	roll    func() float64   // an enlistment's draw: the test seam's, or math/rand/v2's
	rdb     redis.UniversalClient
	tel     *instruments
	breaker breaker

	jobs     atomic.Pointer[roster] // read without a lock on every draw
	inFlight atomic.Int32           // slices running now
	hanging  atomic.Int32           // hung slices not yet returned
	misuses  atomic.Uint64          // calls refused as programming errors
	closed   atomic.Bool

	mu       sync.Mutex // guards registration and shutdown
	shareMu  sync.Mutex // orders reshares
	slices   sync.WaitGroup
	stop     chan struct{} // closed by Shutdown: the timer stops
	wake     chan struct{} // the timer looks at the plans again (timer.go)
	drained  chan struct{} // closed once every slice has ended after Shutdown
	drainOne sync.Once

	pressure *pressureGate // pressure.go: no slice starts while the process is busy

	eviction       atomic.Pointer[eviction] // the server's eviction policy, as last read (eviction.go)
	evictionUnread atomic.Bool              // a failed reading was logged
	reachedRedis   atomic.Bool              // a slice's acquire succeeded: the timer may read the policy
	registry       registryState            // what the pace timer wrote to the registry (registry.go)
	born           string                   // when New ran, unix µs and a tie-break: the oldest process that visits a job carries it (lock_acquire.lua)
}

// roster is an immutable snapshot of the registered jobs: Register swaps
// in a new one, so draws never take a lock.
type roster struct {
	entries []*entry
}

// New returns a Recruiter that keeps its locks in rdb. It starts one
// goroutine of its own, the pace timer, which sleeps until a job's planned
// visit is due and no enlistment made it (see [Config].TrafficOnly), and
// reads the server's eviction policy; call [Recruiter.Shutdown] when done.
// New does not dial Redis: a wrong address, password, ACL grant or
// eviction policy shows only in the log once jobs run; call
// [Recruiter.Check] at start-up to learn of it at once.
func New(rdb redis.UniversalClient, cfg Config) (*Recruiter, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: the Redis client is nil", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Recruiter{
		cfg:     cfg,
		rdb:     rdb,
		tel:     newInstruments(cfg.TracerProvider, cfg.MeterProvider),
		breaker: breaker{threshold: int32(cfg.BreakerThreshold), cooldown: cfg.BreakerCooldown},
		stop:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		drained: make(chan struct{}),
		// Microseconds and a random tie-break, fixed-width digits, so
		// that the acquire script compares them as strings.
		born: fmt.Sprintf("%016d%04d", time.Now().UnixMicro(), rand.IntN(10000)),
	}
	r.pressure = newPressureGate(cfg.Pressure, seams.Pressure(&cfg.testSeams))
	r.now, r.roll = seams.Now(&cfg.testSeams), seams.Roll(&cfg.testSeams)
	if r.roll == nil {
		r.roll = rand.Float64
	}
	if r.now == nil {
		// time.Since reads only the monotonic clock: half the cost of
		// time.Now on the drawn path, and immune to wall-clock steps.
		epoch := time.Now()
		r.now = func() time.Time { return epoch.Add(time.Since(epoch)) }
	}
	r.jobs.Store(&roster{})
	r.tel.observe(r) // the per-job gauges; unobserved at Shutdown
	r.slices.Add(1)
	go r.timerLoop()
	return r, nil
}

// Register adds job with its pace and budget. It is safe while requests
// are being served. It returns an error wrapping [ErrInvalidJob],
// [ErrDuplicateJob] or [ErrClosed] that names the offending field. A job
// of packages jobs or tasks that works a queue whose Config.Prefix is not
// the recruiter's is refused with [ErrInvalidJob], naming both: a fleet
// keeps its queues and jobs under one prefix, which package inspect, the
// dashboard and the worksteal command read.
func (r *Recruiter) Register(job Job, cfg JobConfig) error {
	if job == nil {
		return fmt.Errorf("%w: job is nil", ErrInvalidJob)
	}
	name := job.Name()
	if err := names.Check(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidJob, err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(name); err != nil {
		return err
	}
	// A queue under another prefix would be listed apart from its jobs:
	// inspect, the dashboard and the CLI read one prefix.
	if prefix, q, ok := worksqueue.Of(job); ok && prefix != r.cfg.Prefix {
		return fmt.Errorf("%w %q: it works queue %s under prefix %q, and this recruiter's prefix is %q: give the queue's and the recruiter's Config the same Prefix",
			ErrInvalidJob, name, q, prefix, r.cfg.Prefix)
	}
	if sb, ok := job.(SideBySide); ok && cfg.Slices == 0 && cfg.Schedule == "" {
		cfg.Slices = min(max(sb.Slices(), 1), slicesMax)
	}
	cfg.Slices = max(cfg.Slices, 1)

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return ErrClosed
	}
	old := r.jobs.Load()
	fixed, auto := cfg.Rate, cfg.Rate == 0 && (cfg.Schedule == "" || r.cfg.TrafficOnly)
	for _, e := range old.entries {
		if e.name == name {
			return fmt.Errorf("%w: %q is already registered", ErrDuplicateJob, name)
		}
		fixed += e.cfg.Rate
		auto = auto || r.sharesLeft(e.mode)
	}
	// A little slack so that, say, ten jobs at 0.1 are accepted.
	switch {
	case fixed > 1+1e-9:
		return fmt.Errorf("%w %q: Rate %v brings the sum of rates to %v, above 1", ErrInvalidJob, name, cfg.Rate, fixed)
	case auto && fixed > 1-1e-9:
		return fmt.Errorf("%w %q: the fixed rates sum to %v, which leaves no share for the jobs without Rate", ErrInvalidJob, name, fixed)
	}
	e := newEntry(job, name, cfg, r.cfg, r.now())
	r.listen(e)
	r.jobs.Store(&roster{entries: append(old.entries[:len(old.entries):len(old.entries)], e)})
	r.reshare()
	r.wakeTimer()
	return nil
}

// Draw is the result of one roll: a job (recruited) or none (dismissed).
// It is a small value; the zero Draw is dismissed.
type Draw struct {
	r     *Recruiter
	e     *entry
	share float64 // the chance this roll had of drawing e
}

// Recruited reports whether the roll picked a job that this process could
// run now.
func (d Draw) Recruited() bool { return d.e != nil }

// Job returns the name of the drawn job, or "" if dismissed.
func (d Draw) Job() string {
	if d.e == nil {
		return ""
	}
	return d.e.name
}

// Draw rolls once against the jobs' shares of enlistments (fixed rates,
// and the shares automatic pace learnt): the first step of the
// middleware's two-step form, taken before the handler. A dismissed draw
// costs a few nanoseconds, allocates nothing and never touches Redis. A
// job that this process knows it cannot run now (cooling off, breaker
// open, all slice slots busy, shut down) is dismissed too.
func (r *Recruiter) Draw() Draw {
	roll := r.roll()
	sum := 0.0
	for _, e := range r.jobs.Load().entries {
		share := e.share.Load()
		if sum += share; roll < sum {
			if !r.open(e, false) {
				// One atomic add and a load: this is every request when a
				// job cools off at rate 1.
				if n := e.stats.gatedAtDraw.Add(1); n >= e.stats.windowEnd.Load() {
					e.windowEnded(n, r.now())
				}
				return Draw{}
			}
			e.stats.admitted.Add(1)
			return Draw{r: r, e: e, share: share}
		}
	}
	return Draw{}
}

// Context returns the context for a drawn request's handler: ctx with a
// fast-exit marker that [MarkFastExit] sets, on it or on any context
// derived from it. Markers nest: a mark reaches every draw whose context
// the handler's derives from (two recruiters' middlewares around one
// handler both see it).
func (d Draw) Context(ctx context.Context) context.Context {
	return withMarker(ctx)
}

// Marked reports whether the handler marked ctx, the context that
// [Draw.Context] returned, as a fast exit.
func (d Draw) Marked(ctx context.Context) bool { return marked(ctx) }

// Enlist hands the drawn slice on once the handler has returned with a
// fast exit; after any other response, do not call it. ctx is the
// request's context (the one [Draw.Context] returned, or its parent).
//
// In background mode (the default) the slice starts on a goroutine of its
// own once ctx is done, which servers do when the handler has returned,
// so that stolen work does not compete with the response; a ctx that is
// never done holds the slice's slot for at most a few seconds.
//
// In inline mode ([Config.Inline]) Enlist calls flush, which sends the
// response to the client, then runs the slice before it returns. A nil
// flush means there is nothing to send first. When flush fails (the
// writer cannot flush, as under http.TimeoutHandler), the slice goes to
// the background instead, so that it never holds the response back.
//
// A dismissed Draw does nothing. Enlist a Draw at most once (a second,
// while the first slice runs, is gated: the job is already running here).
// Errors and panics of the slice never reach the caller. A nil ctx is a
// programming error: the slice is dismissed, the first one logged with
// its stack, all counted in [Stats].Misuses.
func (d Draw) Enlist(ctx context.Context, flush func() error) {
	switch {
	case d.e == nil:
	case ctx == nil:
		d.r.misused("Draw.Enlist or Recruiter.Enlist called with a nil context")
	case !d.r.cfg.Inline, flush != nil && flush() != nil:
		d.r.start(ctx, d.e, launch{share: d.share, after: ctx.Done()})
	default:
		d.r.start(ctx, d.e, launch{share: d.share, inline: true})
	}
}

// misused reports a programming error of the caller's without a crash:
// the first is logged with its stack, each is counted.
func (r *Recruiter) misused(what string) {
	if r.misuses.Add(1) == 1 {
		r.cfg.Logger.Error("worksteal: "+what+"; the slice is dismissed (logged once, counted in Stats.Misuses)",
			slog.String("stack", string(debug.Stack())))
	}
}

// Enlist offers the caller's time after a fast exit: one roll and, if a
// job is drawn, one slice of it, run as [Draw.Enlist] runs it (in the
// background once ctx is done, or inline with [Config.Inline]). It is the
// one-call form for code that knows it just exited fast; middleware uses
// [Recruiter.Draw].
func (r *Recruiter) Enlist(ctx context.Context) {
	r.Draw().Enlist(ctx, nil)
}

// open reports whether e could run now, from this process's own state;
// spare: it may take the spare slot beyond MaxConcurrent. It reads the
// clock only when a cool-off or the breaker needs it.
func (r *Recruiter) open(e *entry, spare bool) bool {
	if r.closed.Load() || e.running.Load() || r.inFlight.Load() >= r.slots(spare) {
		return false
	}
	if e.coolUntil.Load() == 0 && !r.breaker.isOpen() {
		return true
	}
	now := r.now()
	return !e.coolingOff(now) && r.breaker.allows(now)
}

// afterWaitMax bounds how long a background slice waits for its request
// to end: a context that is never cancelled must not hold a slot forever.
const afterWaitMax = 5 * time.Second

// launch is how a slice was asked for.
type launch struct {
	share  float64         // the chance that the enlistment drew the job; 1 for the pace timer's
	after  <-chan struct{} // the slice waits for it to close (its request's end); nil: at once
	inline bool            // it runs on the caller's goroutine
	woken  bool            // an enqueue here asked for it (wake.go)
	spare  bool            // a tick held back past tickHoldMax: it may take the spare slot
}

// start takes a slot and the job (one slice of a job per process at a
// time), then, on the caller's goroutine (inline) or a new one once after
// is closed, passes the gates again, as state may have changed since the
// draw, and runs the slice.
func (r *Recruiter) start(ctx context.Context, e *entry, l launch) {
	if !r.takeSlot(l.spare) {
		e.stats.gatedLater.Add(1)
		return
	}
	if !e.running.CompareAndSwap(false, true) {
		r.releaseSlot()
		e.stats.gatedLater.Add(1)
		return
	}
	run := func() {
		hung := false
		defer func() {
			if !hung {
				e.running.Store(false) // a hung slice frees its job when it returns
			}
			r.releaseSlot()
			r.wakeTimer() // the job's next visit is planned, and a slot is free
		}()
		if !r.waitFor(l.after) || !r.admit(ctx, e, l.woken) {
			e.stats.gatedLater.Add(1)
			return
		}
		hung = r.runSlice(ctx, e, l.share, l.woken)
	}
	if l.inline {
		run()
		return
	}
	go func() {
		// Jobs' panics are recovered with the slice; this is for a user's
		// logger or tracer panicking on a goroutine that only we own.
		defer func() {
			if v := recover(); v != nil {
				r.cfg.Logger.Error("worksteal: panic on the recruiter's goroutine, recovered",
					slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			}
		}()
		run()
	}()
}

// waitFor waits for after to close (nil: at once), for at most
// afterWaitMax; false if Shutdown began meanwhile.
func (r *Recruiter) waitFor(after <-chan struct{}) bool {
	if after != nil {
		timeout := time.NewTimer(afterWaitMax)
		defer timeout.Stop()
		select {
		case <-after:
		case <-timeout.C:
		case <-r.stop:
		}
	}
	return !r.closed.Load()
}

// admit is the last gate before Redis: the cool-off (which a woken slice
// passes), the pressure gate, then the breaker, whose probe it may claim,
// so nothing may stand between it and the slice. An open breaker may
// first have the slice check that Redis answers again, and then let it
// probe.
func (r *Recruiter) admit(ctx context.Context, e *entry, woken bool) bool {
	now := r.now()
	if !woken && e.coolingOff(now) || r.pressed(e, now) {
		return false
	}
	switch r.breaker.admit(now) {
	case gatePass:
		return true
	case gateCheck:
		return r.redisAnswers(ctx, e) && r.breaker.pass(r.now())
	}
	return false
}

// slots is how many slices may run at once here: MaxConcurrent, and one
// more for a tick that would otherwise be held back past tickHoldMax.
func (r *Recruiter) slots(spare bool) int32 {
	if spare {
		return int32(r.cfg.MaxConcurrent) + 1
	}
	return int32(r.cfg.MaxConcurrent)
}

// takeSlot reserves one of the slice slots (spare: the spare one too) and
// registers the slice with Shutdown; false when none is free or the
// recruiter is closed.
func (r *Recruiter) takeSlot(spare bool) bool {
	for {
		n := r.inFlight.Load()
		if n >= r.slots(spare) {
			return false
		}
		if r.inFlight.CompareAndSwap(n, n+1) {
			break
		}
	}
	// The mutex orders slices.Add before Shutdown's Wait.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		r.inFlight.Add(-1)
		return false
	}
	r.slices.Add(1)
	return true
}

func (r *Recruiter) releaseSlot() {
	r.inFlight.Add(-1)
	r.slices.Done()
}

// Shutdown stops recruiting and waits for the slices in flight (each bounded
// by its budget, but for a hung one, which it waits for too) and the pace
// timer, or for ctx. It is idempotent; later
// calls wait the same way.
func (r *Recruiter) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed.Load() {
		r.closed.Store(true)
		close(r.stop)
		r.tel.unobserve()
		for _, e := range r.jobs.Load().entries {
			if e.unlisten != nil {
				e.unlisten()
			}
		}
	}
	r.mu.Unlock()
	r.drainOne.Do(func() {
		go func() {
			r.slices.Wait()
			close(r.drained)
		}()
	})
	select {
	case <-r.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("recruiter: shutdown: %w", ctx.Err())
	}
}
