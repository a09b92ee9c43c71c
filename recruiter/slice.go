package recruiter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/worksteal/worksteal/internal/heal"
)

// slice is one recruitment of a job, from its visit to the job's lock to
// the lock's hand-on: what the visit learnt, and the lock it holds.
type slice struct {
	r     *Recruiter
	e     *entry
	ctx   context.Context // the recruitment span's, not cancelled with the request
	lock  heldLock        // zero unless the visit took the lock
	g     grant           // what the visit learnt
	taken time.Time       // when it learnt it
	until time.Time       // how long this process stays away; automatic pace: its next planned visit
	tick  time.Time       // a schedule: the tick this slice runs
	woken bool            // an enqueue here asked for it (wake.go)
}

// runSlice is one recruitment: its span, the lock, the job, the release.
// It runs on context.WithoutCancel(enlisting): the request may end first.
// It reports whether the slice was left hung, its job still taken.
func (r *Recruiter) runSlice(enlisting context.Context, e *entry, share float64, woken bool) (hung bool) {
	ctx, span := r.tel.start(context.WithoutCancel(enlisting), e.name, share)
	s := &slice{r: r, e: e, ctx: ctx, woken: woken}
	res, hung := s.recruit()
	r.tel.end(ctx, span, e.name, res)
	e.stats.record(res, r.now())
	return hung
}

// hungAfter is how long a slice may run before it counts as hung: twice
// its lock's TTL, when its budget and every margin are long spent.
func hungAfter(e *entry) time.Duration { return 2*e.lock.ttl + e.finish }

func (s *slice) recruit() (res result, hung bool) {
	r, e, ctx := s.r, s.e, s.ctx
	sent := r.now()
	v := e.mode.visit(e, s.woken, sent)
	if v.kind != visitWoken {
		v.born = r.born // keeps or claims the carrier's place; a fixed rate has none
	}
	lctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	held, g, err := e.lock.acquire(lctx, r.rdb, v)
	cancel()
	if err != nil {
		err = fmt.Errorf("recruiter: acquire lock %s: %w", e.lock.key, err)
		r.redisFailed(ctx, e, err)
		return result{Outcome: OutcomeError, Err: err}, false
	}
	e.timerAgain.Store(0) // the visit replans: the timer follows the plan
	if !r.reachedRedis.Load() {
		r.reachedRedis.Store(true)
		r.wakeTimer() // to read the eviction policy
	}
	s.lock, s.g, s.taken = held, g, r.now()
	e.learnPause(g, s.taken)
	// How long this process stays away, which the mode plans from.
	s.until = s.taken.Add(e.holdOff(g))
	e.mode.learn(s, v, sent)
	r.breaker.succeed()
	e.wokenVisited(g, s.until)
	if g.state != lockTaken {
		e.coolOff(s.until)
		return skipped(g), false
	}
	stopGuard := s.guard()
	// The job runs on a goroutine of its own so that a job that never
	// returns costs its process one goroutine, not a slot (and, inline, not
	// the request).
	ran := make(chan result, 1)
	go func() { ran <- r.runJob(ctx, e, s.tick) }()
	timer := time.NewTimer(hungAfter(e))
	defer timer.Stop()
	select {
	case res := <-ran:
		stopGuard()
		s.finish(res)
		return res, false
	case <-timer.C:
	}
	// Hung: the slot goes back, so the process's other jobs go on; the job
	// stays taken here and its lock alive in Redis until it returns, so
	// that no process runs it twice at once.
	r.hanging.Add(1)
	r.slices.Add(1) // Shutdown waits for it too; the slot's own count keeps this Add legal
	err = fmt.Errorf("recruiter: job %s still running %v after it began, past its budget of %v: hung", e.name, hungAfter(e), e.cfg.Budget)
	r.cfg.Logger.ErrorContext(ctx, "worksteal: slice hung; its slot is freed, and the job is held, its lock kept alive, until it returns",
		slog.String("job", e.name), slog.Duration("budget", e.cfg.Budget), slog.Duration("ran", hungAfter(e)))
	go func() {
		defer r.slices.Done()
		res := <-ran
		stopGuard()
		s.finish(res)
		r.cfg.Logger.WarnContext(ctx, "worksteal: hung slice returned; the job can run again",
			slog.String("job", e.name), slog.Duration("elapsed", res.Duration), slog.String("outcome", string(res.Outcome)))
		r.hanging.Add(-1)
		e.running.Store(false)
	}()
	return result{Outcome: OutcomeHung, Ran: true, Duration: hungAfter(e), Err: err}, true
}

// guardLife is the least life an overrunning slice's lock is extended to.
// Renewed every half TTL, it lets a busy machine (a stalled timer, a slow
// Redis) miss several renewals before another process could take the job.
const guardLife = 2 * time.Second

// guard keeps the lock of a slice that runs past its budget and margin
// alive for as long as the slice runs, so that no other process starts the
// job beside it, and says so in the log. A process that dies leaves the
// lock to expire within guardLife, or twice its usual TTL if longer. It
// returns the function that stops it.
func (s *slice) guard() (stop func()) {
	r, e, ctx := s.r, s.e, s.ctx
	began := time.Now()
	var (
		mu      sync.Mutex
		stopped bool
		warned  bool
		timer   *time.Timer
	)
	extend := func() {
		rctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
		err := s.lock.refresh(rctx, max(2*e.lock.ttl, guardLife))
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		log := r.cfg.Logger.With(slog.String("job", e.name), slog.Duration("budget", e.cfg.Budget))
		switch {
		case errors.Is(err, errLockNotHeld):
			log.ErrorContext(ctx, "worksteal: an overrunning slice lost its lock: another process may run the job beside it")
			return
		case err != nil:
			// Redis may come back before the lock expires: keep trying.
			log.WarnContext(ctx, "worksteal: could not extend an overrunning slice's lock", slog.Any("error", err))
		case !warned && time.Since(began) > e.due():
			warned = true
			log.WarnContext(ctx, "worksteal: slice overran its budget; its lock is extended while it runs")
		}
		timer.Reset(e.lock.ttl / 2)
	}
	mu.Lock()
	defer mu.Unlock()
	// A quarter of the margin past the budget: a prompt job has returned
	// by then, even late on a loaded machine, and three quarters of the
	// margin are left for the first extension to reach Redis. One that
	// comes after the release finds the lock not ours and changes nothing.
	timer = time.AfterFunc(e.cfg.Budget+(e.lock.ttl-e.cfg.Budget)/4, extend)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// skipped is the outcome of an acquire that did not take the lock.
func skipped(g grant) result {
	switch g.state {
	case lockPaused:
		return result{Outcome: OutcomeSkippedPaused}
	case lockResting:
		return result{Outcome: OutcomeSkippedCooldown}
	}
	return result{Outcome: OutcomeSkippedLocked}
}

// panicError carries a recovered panic and its stack.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func callJob(ctx context.Context, job Job) (report Report, err error) {
	defer func() {
		if v := recover(); v != nil {
			report, err = Report{}, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return job.Run(ctx)
}

// overrunGrace is how late past its budget a slice may return before it
// counts as a timeout: jobs that stop when ctx is done return a little late.
func overrunGrace(budget time.Duration) time.Duration {
	return max(budget/10, 5*time.Millisecond)
}

// runJob runs one slice under the budget and classifies its outcome; a
// schedule's tick and the logger ([Logger]) go into its context.
func (r *Recruiter) runJob(ctx context.Context, e *entry, tick time.Time) result {
	if !tick.IsZero() {
		ctx = context.WithValue(ctx, tickKey{}, tick)
	}
	if r.pressure.threshold > 0 {
		ctx = context.WithValue(ctx, gateKey{}, r.pressure)
	}
	ctx = context.WithValue(ctx, loggerKey{}, r.cfg.Logger)
	sctx, cancel := context.WithTimeout(ctx, e.cfg.Budget)
	defer cancel()
	began := time.Now()
	report, err := callJob(sctx, e.job)
	res := result{Ran: true, Items: report.Items, More: report.More, Duration: time.Since(began), Err: err}
	// A job's own shorter deadline is not its budget's; a Finisher's
	// slice spends its budget and finishes what it started.
	budgetSpent := sctx.Err() != nil && e.finish == 0

	log := r.cfg.Logger.With(slog.String("job", e.name), slog.Duration("elapsed", res.Duration))
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		res.Outcome = OutcomePanic
		log.ErrorContext(ctx, "worksteal: slice panicked", slog.Any("panic", pe.value), slog.String("stack", string(pe.stack)))
	// An error once the budget is spent is the budget's doing, whatever its
	// type (a Redis call cut by the deadline reports an i/o timeout).
	case budgetSpent && err != nil || res.Duration > e.due()+overrunGrace(e.cfg.Budget):
		res.Outcome = OutcomeTimeout
		if err == nil {
			res.Err = fmt.Errorf("recruiter: job %s overran its budget of %v", e.name, e.cfg.Budget)
		}
		log.WarnContext(ctx, "worksteal: slice timed out", slog.Duration("budget", e.cfg.Budget), slog.Any("error", res.Err))
	case err != nil:
		res.Outcome = OutcomeError
		log.ErrorContext(ctx, "worksteal: slice failed", slog.Any("error", err))
	default:
		res.Outcome = OutcomeRan
	}
	return res
}

// finish hands the lock on, as the job's mode says.
func (s *slice) finish(res result) {
	r, e, ctx := s.r, s.e, s.ctx
	fctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	err := e.mode.handOn(fctx, s, res, r.now())
	switch {
	case errors.Is(err, errLockNotHeld):
		r.cfg.Logger.WarnContext(ctx, "worksteal: the job's lock was no longer this slice's at its end: it expired (another process may have run the job meanwhile), or a retried release had already removed it",
			slog.String("job", e.name), slog.Duration("elapsed", res.Duration), slog.Duration("lock_ttl", e.lock.ttl))
	case err != nil:
		r.redisFailed(ctx, e, fmt.Errorf("recruiter: release lock %s: %w", e.lock.key, err))
	default:
		r.breaker.succeed()
	}
}

// redisAnswers is an open breaker's check: one PTTL of e's lock key, a
// read-only call that the ACL grant allows, sent where the lock lives (a
// Cluster routes it by the key, a failover client to the master). It
// reports the answer to the breaker; a failure counts for nothing but
// goes to heal, so that a ClusterClient finds a promoted replica.
func (r *Recruiter) redisAnswers(ctx context.Context, e *entry) bool {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RedisTimeout)
	err := r.rdb.PTTL(cctx, e.lock.key).Err()
	cancel()
	heal.Notice(r.rdb, err)
	r.breaker.checked(err == nil, r.now())
	return err == nil
}

// redisFailed counts a failed Redis call towards the breaker and logs it.
func (r *Recruiter) redisFailed(ctx context.Context, e *entry, err error) {
	heal.Notice(r.rdb, err) // a ClusterClient whose master died finds its replica
	if r.breaker.failures.Load() == 0 {
		// The first failure in a row: its warning names the cause
		// (a refused dial hides behind the deadline), at the cost of one
		// dial per outage.
		err = r.explain(ctx, err)
	}
	log := r.cfg.Logger.With(slog.String("job", e.name), slog.Any("error", err))
	if r.breaker.fail(r.now()) {
		log.WarnContext(ctx, "worksteal: Redis failing; recruitment paused", slog.Duration("for", r.cfg.BreakerCooldown))
		return
	}
	log.WarnContext(ctx, "worksteal: Redis call failed")
}
