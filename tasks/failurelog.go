package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// WithLogger sets where the [Mux] logs its tasks' failures: a failed
// attempt that the queue retries at DEBUG (retries are the queue doing
// its work, and [Mux.Stats] and the metrics count them; a panic is a bug,
// at ERROR with its stack), a task dead-lettered by this process at
// ERROR (no one will run it again unless an operator retries it), each
// with task_type, task_id, queue, attempt, max_attempts and error. At most
// 10 lines of each kind per second, and then one line that counts what
// was left out. Default: the Config.Logger of the recruiter that runs the
// slice, else [slog.Default]; nil keeps the default. A [Client] ignores
// it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.logger = l
		}
	})
}

// WithDeadLetterHook sets a function that the [Mux] calls once for each
// task that the queue dead-letters: for error trackers and alerts. It
// gets the task ([Info]) and the cause, with a context that keeps the
// handler's values but not its end. For a task whose attempt failed at
// its limit in this process, it runs on the handler's goroutine, after
// the handler and its middleware returned and before the outcome is
// settled, so it should be quick (error trackers' clients queue what
// they send); a panic of it is recovered and logged. The queue's scripts
// dead-letter tasks too, where no handler failed: a lease that expired at
// its last attempt (its process died or hung), an id without a stored
// value. The hook runs for those in the process whose claim (the Mux's
// job) or [jobs.TidyStale] of the same [queue.Queue] made them, after
// that call; their cause wraps [queue.ErrLeaseLost] for an expired lease,
// and their Info has no Priority. It is lost if the process dies before
// it ran. nil keeps none. A [Client] ignores it.
func WithDeadLetterHook(hook func(ctx context.Context, task Info, cause error)) Option {
	return optionFunc(func(o *options) { o.onDead = hook })
}

// failure is a failed attempt, as the log and the dead-letter hook get
// it: what is known of its task (a task whose envelope did not decode
// has no Type), its error, and whether the queue dead-letters it; or
// else a dead letter that a script made (byScript).
type failure struct {
	task     Info
	err      error
	dead     bool
	byScript bool
	late     bool // it ended past its lease: its outcome is thrown away
}

// reportScriptDead reports a dead letter that a script of st made.
func (m *Mux) reportScriptDead(ctx context.Context, st *qstore.Store, d qstore.ScriptDead) {
	info := Info{ID: d.ID, Queue: st.Name(), Attempt: d.Attempt, MaxAttempts: d.MaxAttempts}
	if info.MaxAttempts == 0 {
		info.MaxAttempts = st.Config().MaxAttempts
	}
	var chain *taskenv.Chain
	if env, err := taskenv.Decode(d.Payload); err == nil {
		info.Type, chain = env.Type, env.Chain
	}
	info.fromID(chain)
	err := errors.New(d.Cause)
	if d.LeaseExpired() {
		err = fmt.Errorf("%w: %s", queue.ErrLeaseLost, d.Cause)
	}
	m.report(ctx, failure{task: info, err: err, dead: true, byScript: true})
}

// logFailures is the Mux's own outermost middleware (see [Mux.Use]): it
// reports the attempt's failure, once every middleware returned, and
// makes a middleware's own panic the attempt's error.
func (m *Mux) logFailures(next Handler) Handler {
	return func(ctx context.Context, typ string, args []byte) (result []byte, err error) {
		defer func() {
			if v := recover(); v != nil {
				result, err = nil, &panicError{value: v, stack: debug.Stack()}
			}
			if err == nil {
				return
			}
			t := runningFrom(ctx)
			// A canceled task's outcome is dropped: neither retried nor dead.
			if t == nil || errors.Is(context.Cause(t.Context), queue.ErrCanceled) {
				return
			}
			// A worker's shutdown stopped it: handed back, attempt unused.
			err = drain.HandBack(t.Context, err)
			m.report(ctx, failure{task: t.info(), err: err, dead: t.dies(err), late: t.pastLease()})
		}()
		return next(ctx, typ, args)
	}
}

// pastLease reports whether t's lease has surely ended, so that the
// queue throws its outcome away: a claim or Tidy hands the task back, or
// dead-letters it and reports that (see [Mux.reportScriptDead]).
func (t *running) pastLease() bool {
	return t.leaseGone != 0 && time.Now().UnixNano() >= t.leaseGone
}

// dies reports whether the queue dead-letters the task when its attempt
// fails with err: at its last attempt, or at once for a [DeadLetter].
func (t *running) dies(err error) bool {
	return lastAttempt(int(t.attempt), int(t.maxAttempts), err)
}

// report logs f, rate-limited, and runs the dead-letter hook for a dead
// letter.
func (m *Mux) report(ctx context.Context, f failure) {
	var pe *panicError
	panicked := errors.As(f.err, &pe)
	level, msg := slog.LevelDebug, "worksteal: task failed; the queue retries it"
	switch {
	case f.late:
		level, msg, f.dead = slog.LevelInfo, "worksteal: task failed after its lease ended; the queue throws the outcome away and hands the task back or dead-letters it", false
	case f.byScript:
		level, msg = slog.LevelError, "worksteal: the queue dead-lettered a task that no handler failed"
	case f.dead:
		level, msg = slog.LevelError, "worksteal: task failed at its last attempt; the queue dead-letters it"
	case panicked:
		level, msg = slog.LevelError, "worksteal: task panicked; the queue retries it"
	case errors.Is(f.err, drain.ErrStopped):
		level, msg = slog.LevelInfo, "worksteal: the worker stopped before the task finished; the queue runs it again, its attempt unused"
	case snoozed(f.err):
		msg = "worksteal: task snoozed; the queue runs it again later"
	}
	log := m.loggerFor(ctx)
	if log.Enabled(ctx, level) && m.lines.allow(log, level, f.dead) {
		attrs := []slog.Attr{
			slog.String("task_type", f.task.Type), slog.String("task_id", f.task.ID), slog.String("queue", f.task.Queue),
			slog.Int("attempt", f.task.Attempt), slog.Int("max_attempts", f.task.MaxAttempts), slog.Any("error", f.err),
		}
		if panicked {
			attrs = append(attrs, slog.String("stack", string(pe.stack)))
		}
		log.LogAttrs(ctx, level, msg, attrs...)
	}
	if f.dead && m.onDead != nil {
		m.runDeadHook(ctx, log, f)
	}
}

func (m *Mux) runDeadHook(ctx context.Context, log *slog.Logger, f failure) {
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "worksteal: the dead-letter hook panicked, recovered",
				slog.String("task_id", f.task.ID), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		}
	}()
	m.onDead(context.WithoutCancel(ctx), f.task, f.err)
}

// loggerFor is the logger of the Mux's lines in the slice whose context
// is ctx.
func (m *Mux) loggerFor(ctx context.Context) *slog.Logger {
	if m.logger != nil {
		return m.logger
	}
	if l := recruiter.Logger(ctx); l != nil {
		return l
	}
	return slog.Default()
}

// failureLines bounds the lines of each kind (dead letters, the other
// failures) that a Mux writes per failureWindow.
const (
	failureLines  = 10
	failureWindow = time.Second
)

// lineLimiter bounds the failure lines of a Mux, and writes a line that
// counts those left out at the end of the window that left them out.
type lineLimiter struct {
	mu       sync.Mutex
	start    time.Time // the window's
	written  [2]int    // in this window: other failures, dead letters
	leftOut  [2]int    // since the last count line
	level    slog.Level
	log      *slog.Logger // the latest left out's
	counting bool         // a count line is due
	// time.Now and time.AfterFunc; tests replace them.
	now        func() time.Time
	countAfter func(time.Duration, func())
}

// allow reports whether a line of a dead letter or another failure may
// be written now, to log at level, and counts it out if not.
func (l *lineLimiter) allow(log *slog.Logger, level slog.Level, dead bool) bool {
	kind := 0
	if dead {
		kind = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	if now.Sub(l.start) >= failureWindow {
		l.start, l.written = now, [2]int{}
	}
	if l.written[kind] < failureLines {
		l.written[kind]++
		return true
	}
	if l.leftOut == [2]int{} || level > l.level {
		l.level = level
	}
	l.leftOut[kind]++
	l.log = log
	if !l.counting {
		l.counting = true
		after := l.countAfter
		if after == nil {
			after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
		}
		after(l.start.Add(failureWindow).Sub(now), l.writeCount)
	}
	return false
}

// writeCount writes the line that counts the lines left out, on a
// timer's goroutine: a logger's panic there is recovered, since a
// library must not crash its host from a goroutine of its own.
func (l *lineLimiter) writeCount() {
	l.mu.Lock()
	left, level, log := l.leftOut, l.level, l.log
	l.leftOut, l.counting = [2]int{}, false
	l.mu.Unlock()
	if left == [2]int{} {
		return
	}
	defer func() { _ = recover() }()
	log.Log(context.Background(), level, fmt.Sprintf("worksteal: task failures left out of the log: at most %d lines of each kind per %v", failureLines, failureWindow),
		slog.Int("failures_left_out", left[0]), slog.Int("dead_letters_left_out", left[1]))
}
