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

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/telemetry"
)

// The probe is read-only, but Run rather than RunRO: EVALSHA_RO needs
// Redis 7, and the recruiter works with 6.2 too.
var (
	//go:embed probe.lua
	probeSource string
	probeScript = redis.NewScript(probeSource)

	//go:embed cooldown.lua
	cooldownSource string
	cooldownScript = redis.NewScript(cooldownSource)
)

// cooldownValue marks a job's lock key as a cooldown rather than a running
// slice; redislock tokens are random base64, so they never equal it.
const cooldownValue = "cooldown"

// runSlice is one recruitment: its span, the lock, the job, the release.
// It runs on context.WithoutCancel(enlisting): the request may end first.
func (r *Recruiter) runSlice(enlisting context.Context, e *entry) {
	ctx, span := r.tel.Start(context.WithoutCancel(enlisting), e.name, e.cfg.Rate)
	res := r.recruit(ctx, e)
	r.tel.End(ctx, span, e.name, res)
	e.stats.record(res, r.now())
}

func (r *Recruiter) recruit(ctx context.Context, e *entry) telemetry.Result {
	lctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	lock, err := r.locker.Obtain(lctx, e.key, e.lockTTL, nil)
	cancel()
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		r.breaker.succeed()
		return r.skip(ctx, e)
	case err != nil:
		err = fmt.Errorf("recruiter: obtain lock %s: %w", e.key, err)
		r.redisFailed(ctx, e, err)
		return telemetry.Result{Outcome: telemetry.OutcomeError, Err: err}
	}
	r.breaker.succeed()
	stopGuard := r.guardLock(ctx, e, lock)
	res := r.runJob(ctx, e)
	stopGuard()
	e.backlog.Store(res.Outcome == telemetry.OutcomeRan && res.More)
	r.finish(ctx, e, lock, res)
	return res
}

// lockGuardMax bounds how long a lock is kept alive for a slice that
// ignores its context: past it, the job is taken to hang, and mutual
// exclusion gives way to the job's other processes.
func lockGuardMax(e *entry) time.Duration { return 10 * e.lockTTL }

// guardLock keeps the lock of a slice that runs past its budget and margin
// alive, so that no other process starts the job beside it, and says so in
// the log. It returns the function that stops it.
func (r *Recruiter) guardLock(ctx context.Context, e *entry, lock *redislock.Lock) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		timer   *time.Timer
	)
	giveUp := time.Now().Add(lockGuardMax(e))
	extend := func() {
		if time.Now().After(giveUp) {
			r.cfg.Logger.ErrorContext(ctx, "worksteal: slice still running long past its budget; its lock is left to expire",
				slog.String("job", e.name), slog.Duration("budget", e.cfg.Budget), slog.Duration("ran", lockGuardMax(e)))
			return
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
		err := lock.Refresh(rctx, e.lockTTL, nil)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		r.cfg.Logger.WarnContext(ctx, "worksteal: slice overran its budget; its lock is extended while it runs",
			slog.String("job", e.name), slog.Duration("budget", e.cfg.Budget), slog.Any("error", err))
		timer.Reset(e.lockTTL / 2)
	}
	mu.Lock()
	defer mu.Unlock()
	// Half the margin past the budget: a prompt job has released by then.
	timer = time.AfterFunc(e.cfg.Budget+(e.lockTTL-e.cfg.Budget)/2, extend)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// skip learns why the lock was held and until when, and cools off locally
// until then, so this process asks Redis again only when it could succeed.
func (r *Recruiter) skip(ctx context.Context, e *entry) telemetry.Result {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	now := r.now()
	reply, err := probeScript.Run(pctx, r.rdb, []string{e.key}, cooldownValue).Int64Slice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		r.redisFailed(ctx, e, fmt.Errorf("recruiter: probe lock %s: %w", e.key, err))
		e.coolOff(now.Add(e.lockTTL))
		return telemetry.Result{Outcome: telemetry.OutcomeSkippedLocked}
	}
	r.breaker.succeed()
	// A TTL past EveryMax is an operator's pause, not a slice or a
	// cooldown of ours: look again after EveryMax. The bound also keeps
	// the milliseconds and the cool-off's unix nanoseconds from overflowing.
	state, pttl := reply[0], time.Duration(min(reply[1], EveryMax.Milliseconds()))*time.Millisecond
	var wait time.Duration
	switch {
	case pttl < 0:
		// A key without expiry (an operator pausing the job, say): not
		// ours to judge; ask again after the longer of a lock's life and Every.
		wait = max(e.lockTTL, e.cfg.Every)
	case state == 2:
		wait = pttl
	default:
		// A running slice ends at its budget, a margin before its lock
		// expires; past that it overruns, and the lock's expiry is the bound.
		wait = pttl - (e.lockTTL - e.cfg.Budget)
		if wait <= 0 {
			wait = pttl
		}
	}
	e.coolOff(now.Add(wait))
	if state == 2 {
		return telemetry.Result{Outcome: telemetry.OutcomeSkippedCooldown}
	}
	return telemetry.Result{Outcome: telemetry.OutcomeSkippedLocked}
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

// runJob runs one slice under the budget and classifies its outcome.
func (r *Recruiter) runJob(ctx context.Context, e *entry) telemetry.Result {
	sctx, cancel := context.WithTimeout(ctx, e.cfg.Budget)
	defer cancel()
	began := time.Now()
	report, err := callJob(sctx, e.job)
	res := telemetry.Result{Ran: true, Items: report.Items, More: report.More, Duration: time.Since(began), Err: err}
	budgetSpent := sctx.Err() != nil // a job's own shorter deadline is not its budget's

	log := r.cfg.Logger.With(slog.String("job", e.name), slog.Duration("elapsed", res.Duration))
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		res.Outcome = telemetry.OutcomePanic
		log.ErrorContext(ctx, "worksteal: slice panicked", slog.Any("panic", pe.value), slog.String("stack", string(pe.stack)))
	// An error once the budget is spent is the budget's doing, whatever its
	// type (a Redis call cut by the deadline reports an i/o timeout).
	case budgetSpent && err != nil || res.Duration > e.cfg.Budget+overrunGrace(e.cfg.Budget):
		res.Outcome = telemetry.OutcomeTimeout
		if err == nil {
			res.Err = fmt.Errorf("recruiter: job %s overran its budget of %v", e.name, e.cfg.Budget)
		}
		log.WarnContext(ctx, "worksteal: slice timed out", slog.Duration("budget", e.cfg.Budget), slog.Any("error", res.Err))
	case err != nil:
		res.Outcome = telemetry.OutcomeError
		log.ErrorContext(ctx, "worksteal: slice failed", slog.Any("error", err))
	default:
		res.Outcome = telemetry.OutcomeRan
	}
	return res
}

// finish hands the lock on: released at once when a clean slice reports a
// backlog, kept as the cluster-wide cooldown when the job has Every, else
// released, with this process resting the job for one budget so that an
// idle job cannot turn request traffic into Redis traffic.
func (r *Recruiter) finish(ctx context.Context, e *entry, lock *redislock.Lock, res telemetry.Result) {
	fctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	now := r.now()
	remaining := e.cfg.Every - res.Duration

	var err error
	switch {
	case res.Outcome == telemetry.OutcomeRan && res.More:
		err = lock.Release(fctx)
	case remaining > time.Millisecond:
		e.coolOff(now.Add(remaining))
		var set int64
		set, err = cooldownScript.Run(fctx, r.rdb, []string{e.key}, lock.Token()+lock.Metadata(), cooldownValue, remaining.Milliseconds()).Int64()
		if err == nil && set == 0 {
			err = redislock.ErrLockNotHeld
		}
	default:
		e.coolOff(now.Add(e.cfg.Budget))
		err = lock.Release(fctx)
	}
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		r.cfg.Logger.WarnContext(ctx, "worksteal: the job's lock was no longer this slice's at its end: it expired (another process may have run the job meanwhile), or a retried release had already removed it",
			slog.String("job", e.name), slog.Duration("elapsed", res.Duration), slog.Duration("lock_ttl", e.lockTTL))
	case err != nil:
		r.redisFailed(ctx, e, fmt.Errorf("recruiter: release lock %s: %w", e.key, err))
	default:
		r.breaker.succeed()
	}
}

// redisFailed counts a failed Redis call towards the breaker and logs it.
func (r *Recruiter) redisFailed(ctx context.Context, e *entry, err error) {
	log := r.cfg.Logger.With(slog.String("job", e.name), slog.Any("error", err))
	if r.breaker.fail(r.now()) {
		log.WarnContext(ctx, "worksteal: Redis failing; recruitment paused", slog.Duration("for", r.cfg.BreakerCooldown))
		return
	}
	log.WarnContext(ctx, "worksteal: Redis call failed")
}
