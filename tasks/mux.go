package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Errors of this package. Those about an argument wrap a message naming it.
var (
	ErrInvalidArgument       = errors.New("tasks: invalid argument")
	ErrDuplicateType         = errors.New("tasks: duplicate task type")
	ErrUnknownType           = errors.New("tasks: unknown task type")
	ErrDecode          error = taskenv.ErrDecode // the envelope's decoding (internal/taskenv) wraps it too
)

// handlerFunc is a typed handler behind its codec: a task of type typ,
// encoded arguments in, encoded result out.
type handlerFunc func(ctx context.Context, c Codec, typ string, args []byte) ([]byte, error)

// handler is a registered type: its handler, the chain of middleware
// around it (see [Mux.Use]) and its counters.
type handler struct {
	run    handlerFunc
	chain  Handler
	cfg    handleConfig
	counts *typeCounts
}

// Mux holds the handlers of task types and makes the job that runs them.
// Registering is safe at any time, also while its job runs: the table is
// copied on write, so the job reads it without a lock. It counts the
// attempts of each type ([Mux.Stats], and metrics: see
// [WithMeterProvider]).
type Mux struct {
	codec    Codec
	tel      muxInstruments
	logger   *slog.Logger                                      // WithLogger's, or nil
	onDead   func(ctx context.Context, task Info, cause error) // WithDeadLetterHook's, or nil
	lines    lineLimiter                                       // of the failures' log
	mu       sync.Mutex                                        // serialises writers of handlers, middleware, lease
	handlers atomic.Pointer[map[string]handler]
	unknown  atomic.Pointer[handler] // HandleUnknown's, or nil
	// middleware is Use's, outermost first; lease is the shortest Lease
	// of the queues of m's jobs, 0 before the first (see [Timeout]).
	middleware []Middleware
	lease      time.Duration
	tracing
}

// NewMux returns a Mux without handlers; see [WithCodec],
// [WithMeterProvider], [WithLogger], [WithDeadLetterHook] and
// [WithTracerProvider].
func NewMux(opts ...Option) *Mux {
	o := newOptions(opts)
	return &Mux{codec: o.codec, tel: newMuxInstruments(o.meterProvider), logger: o.logger, onDead: o.onDead,
		tracing: newTracing(o.tracerProvider)}
}

// add registers run for the tasks of type typ, a checked name.
func (m *Mux) add(typ string, cfg handleConfig, run handlerFunc) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkTimeout(typ, cfg, m.lease); err != nil {
		return err
	}
	h := handler{run: run, cfg: cfg, counts: newTypeCounts(typ)}
	if h.chain = m.chain(run, cfg, h.counts, m.middleware); h.chain == nil {
		return errNilHandler
	}
	old := m.handlers.Load()
	table := make(map[string]handler, 1)
	if old != nil {
		if _, dup := (*old)[typ]; dup {
			return fmt.Errorf("%w: %s", ErrDuplicateType, typ)
		}
		for k, v := range *old {
			table[k] = v
		}
	}
	table[typ] = h
	m.handlers.Store(&table)
	return nil
}

// HandleUnknown registers h for the tasks of the types that no handler
// of m has: types known only at run time, a family of types, a proxy of
// other services' tasks. h gets the task's type and its arguments as the
// Mux's codec encoded them (a task of another codec fails with
// [ErrDecode] before h). What h returns is the task's result as it is:
// [Task.Call] decodes it with the caller's codec, a [Raw] Call returns
// it as bytes. An error fails the attempt as a handler's does; to leave a
// type unserved, h returns an error wrapping [ErrUnknownType], and the
// task fails as it would without h (see [Mux.Job]), counted under "*". h must be safe for
// concurrent use and idempotent, as a handler. Its attempts count under
// the type "*" in [Mux.Stats] and the metrics, whatever their types, so
// that types read at run time do not grow the counters without bound.
// A Mux has one such handler: setting it again returns an error wrapping
// [ErrDuplicateType]; a nil m or h fails with [ErrInvalidArgument].
func (m *Mux) HandleUnknown(h func(ctx context.Context, typ string, args []byte) ([]byte, error)) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil Mux", ErrInvalidArgument)
	case h == nil:
		return fmt.Errorf("%w: nil handler of unknown types", ErrInvalidArgument)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unknown.Load() != nil {
		return fmt.Errorf("%w: the handler of unknown types is set", ErrDuplicateType)
	}
	u := handler{
		run: func(ctx context.Context, _ Codec, typ string, args []byte) ([]byte, error) {
			return h(ctx, typ, args[:len(args):len(args)])
		},
		counts: newTypeCounts(unknownTypes),
	}
	if u.chain = m.chain(u.run, u.cfg, u.counts, m.middleware); u.chain == nil {
		return errNilHandler
	}
	m.unknown.Store(&u)
	return nil
}

// unknownTypes is the type that the attempts of HandleUnknown's handler
// count under; no task type is named so.
const unknownTypes = "*"

// Job returns the job that works q off: a [jobs.Drain] whose handler
// decodes each item's envelope, calls the handler of its type with the
// decoded arguments, and stores the encoded result. Its name is
// "tasks.QUEUE" unless cfg's Name sets one; the rest of cfg is Drain's.
// Like any Drain it maintains q: retries, delayed tasks and a crashed
// worker's expired leases come back with its claims, so it is the one job
// a queue of tasks needs.
//
// A task that cannot run fails its attempt like a handler error, never
// with a panic: a type that no handler has, and [Mux.HandleUnknown]
// does not serve, with an error wrapping [ErrUnknownType],
// an envelope or arguments that do not decode (or a task enqueued with
// another codec) with one wrapping [ErrDecode]. The queue retries it up to
// its MaxAttempts, then dead-letters it with that cause, and goes on with
// the other items. A handler's panic fails its attempt alone, with an
// error wrapping [jobs.ErrHandlerPanic] that its middleware see (see
// [Mux.Use]), logged with its stack; the Mux recovers it, so the slice
// goes on and returns no error for it. Each failure is logged, and a
// dead letter reported (see [WithLogger], [WithDeadLetterHook]).
func (m *Mux) Job(q *queue.Queue, cfg jobs.DrainConfig) (recruiter.Job, error) {
	switch {
	case m == nil:
		return nil, fmt.Errorf("%w: nil Mux", ErrInvalidArgument)
	case q == nil:
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	if err := names.Check(m.codec.Name()); err != nil {
		return nil, fmt.Errorf("%w: codec name: %v", ErrInvalidArgument, err)
	}
	if err := m.serve(q.Config().Lease); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		// Queue names are valid job names; only the length may be too much.
		cfg.Name = "tasks." + q.Name()
		cfg.Name = cfg.Name[:min(len(cfg.Name), names.MaxLen)]
	}
	m.noteTypes(q)
	st, run := qstore.Of(q), m.run
	st.OnScriptDead(func(ctx context.Context, d qstore.ScriptDead) { m.reportScriptDead(ctx, st, d) })
	return drain.New(q, func(ctx context.Context, it qstore.Item) ([]byte, *qstore.FollowUp, error) {
		return m.traced(ctx, st, it, run) // trace.go
	}, drain.Config{Batching: drain.Batching(cfg.Batching), Concurrency: cfg.Concurrency})
}

// serve notes that m's job works a queue of this lease, once each
// registered type's timeout is found to fit it (see [Timeout]).
func (m *Mux) serve(lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if table := m.handlers.Load(); table != nil {
		for typ, h := range *table {
			if err := checkTimeout(typ, h.cfg, lease); err != nil {
				return err
			}
		}
	}
	if m.lease == 0 || lease < m.lease {
		m.lease = lease
	}
	return nil
}

// run is the Drain handler: one queue item, one task; a chain's step
// returns the next step, which its ack enqueues. The task's handler runs
// in its chain of middleware (see [Mux.Use]), in a context that is the
// task ([running]); a task that reaches no handler fails here, reported
// as the chain's failures are.
func (m *Mux) run(ctx context.Context, st *qstore.Store, it qstore.Item) (_ []byte, _ *qstore.FollowUp, err error) {
	env, err := taskenv.Decode(it.Payload)
	if err == nil && env.Codec != m.codec.Name() {
		err = fmt.Errorf("%w: %s was encoded with codec %q, this Mux has %q", ErrDecode, env.Type, env.Codec, m.codec.Name())
	}
	var h handler
	if err == nil {
		if table := m.handlers.Load(); table != nil {
			h = (*table)[env.Type]
		}
		if h.run == nil {
			if u := m.unknown.Load(); u != nil {
				h = *u
			} else {
				err = fmt.Errorf("%w: %s", ErrUnknownType, env.Type)
			}
		}
	}
	t := &running{Context: ctx, st: st, codec: m.codec, id: it.ID, typ: env.Type, priority: it.Priority,
		attempt: int32(it.Attempt), maxAttempts: int32(it.MaxAttempts), chain: env.Chain}
	if gone, ok := drain.LeaseGone(ctx); ok {
		t.leaseGone = gone.UnixNano()
	}
	if err != nil {
		m.report(ctx, failure{task: t.info(), err: err, dead: t.dies(err)})
		return nil, nil, err
	}
	if env.Chain != nil && env.Chain.Step > 1 {
		t.prev, t.hasPrev = env.Chain.Prev, true
	}
	ctx = t
	m.begin(ctx, h.counts)
	returned := false
	defer func() { // a panic fails the attempt too; a cancel ended it, with no outcome
		canceled := errors.Is(context.Cause(ctx), queue.ErrCanceled)
		m.end(ctx, h.counts, !returned || err != nil, t.dies(err), canceled)
	}()
	result, err := h.chain(ctx, env.Type, env.Args)
	returned = true
	if err != nil {
		return nil, nil, h.cfg.steer(it.Attempt, err)
	}
	return result, nextStep(env, it.ID, result), nil
}
