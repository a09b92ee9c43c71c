package tasks

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/worksteal/worksteal/telemetry"
)

// TypeStats counts what the [Mux]'s jobs did with the tasks of one type
// in this process since the type was registered. Each attempt counts once,
// by what its handler returned: Done, Retried or Dead. An attempt counted
// Done may still be redone if its ack does not reach Redis in time (a
// lost lease: delivery is at least once). The tasks that
// [Mux.HandleUnknown]'s handler runs count under the type "*"; a task
// whose type has no handler, or whose envelope does not decode, counts
// under no type.
type TypeStats struct {
	Type    string
	Running int64  // attempts in their handler now
	Done    uint64 // attempts whose handler returned a result
	// Retried counts the failed attempts (an error, a panic, arguments
	// that do not decode) below the task's limit (its own [Attempts], or
	// else the queue's MaxAttempts): the queue retries them after its
	// backoff, or the delay the error says. A [Snooze] counts here too,
	// at any attempt.
	Retried uint64
	// Dead counts the failed attempts at the task's limit, and those
	// whose handler returned [DeadLetter], which the queue dead-letters.
	Dead uint64
	// TimedOut counts the failed attempts (among Retried and Dead) that
	// the type's [Timeout] ended; Overdue the attempts in their handler
	// now past their timeout: handlers that ignore their context, which
	// keep their place in the slice until they return.
	TimedOut uint64
	Overdue  int64
}

// Failed is the attempts that failed, retried or dead.
func (s TypeStats) Failed() uint64 { return s.Retried + s.Dead }

// Stats returns the counts of every registered type, and of "*" with a
// handler of unknown types, sorted by type. It reads atomics only: no
// Redis call, no lock shared with the jobs.
func (m *Mux) Stats() []TypeStats {
	if m == nil {
		return nil
	}
	var out []TypeStats
	if table := m.handlers.Load(); table != nil {
		out = make([]TypeStats, 0, len(*table)+1)
		for typ, h := range *table {
			out = append(out, h.counts.stats(typ))
		}
	}
	if u := m.unknown.Load(); u != nil {
		out = append(out, u.counts.stats(unknownTypes))
	}
	if out == nil {
		return []TypeStats{}
	}
	slices.SortFunc(out, func(a, b TypeStats) int { return strings.Compare(a.Type, b.Type) })
	return out
}

func (c *typeCounts) stats(typ string) TypeStats {
	return TypeStats{Type: typ, Running: c.running.Load(), Done: c.done.Load(), Retried: c.retried.Load(), Dead: c.dead.Load(),
		TimedOut: c.timedOut.Load(), Overdue: c.overdue.Load()}
}

// typeCounts are one type's counters, and its metric attributes made
// once, at [Task.Handle], so that counting an attempt allocates nothing.
type typeCounts struct {
	running             atomic.Int64
	done, retried, dead atomic.Uint64
	timedOut            atomic.Uint64 // see withTimeout
	overdue             atomic.Int64
	// Each a one-option slice, since a variadic call with a fresh one
	// allocates.
	byType                 []metric.AddOption
	asDone, asRetry, asDie []metric.AddOption
}

func newTypeCounts(typ string) *typeCounts {
	kind := telemetry.AttrTaskType.String(typ)
	by := func(outcome string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kind, telemetry.AttrTaskOutcome.String(outcome)))}
	}
	return &typeCounts{
		byType: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kind))},
		asDone: by(telemetry.TaskDone), asRetry: by(telemetry.TaskRetried), asDie: by(telemetry.TaskDead),
	}
}

// muxInstruments are the Mux's metrics: a counter of attempts by type and
// outcome, and the attempts running by type.
type muxInstruments struct {
	attempts metric.Int64Counter
	running  metric.Int64UpDownCounter
}

// newMuxInstruments makes the instruments of mp's meter, the otel global
// when nil. Errors creating them go to [otel.Handle], as otel
// instrumentation libraries do, and that instrument records nothing.
func newMuxInstruments(mp metric.MeterProvider) muxInstruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(telemetry.ScopeName, metric.WithInstrumentationVersion(telemetry.Version))
	var t muxInstruments
	var err error
	if t.attempts, err = meter.Int64Counter(telemetry.MetricTaskAttempts,
		metric.WithDescription("Task attempts run by this process, by task type and outcome."),
		metric.WithUnit("{attempt}")); err != nil {
		otel.Handle(err)
		t.attempts = noop.Int64Counter{}
	}
	if t.running, err = meter.Int64UpDownCounter(telemetry.MetricTaskRunning,
		metric.WithDescription("Task attempts in their handler in this process now, by task type."),
		metric.WithUnit("{attempt}")); err != nil {
		otel.Handle(err)
		t.running = noop.Int64UpDownCounter{}
	}
	return t
}

// begin counts an attempt of c's type as running.
func (m *Mux) begin(ctx context.Context, c *typeCounts) {
	c.running.Add(1)
	m.tel.running.Add(ctx, 1, c.byType...)
}

// end counts an attempt of c's type as no longer running, and its
// outcome: done unless failed; a failure at the last attempt is dead,
// else retried; none for a task canceled as it ran, whose outcome the
// queue drops (neither retried nor dead).
func (m *Mux) end(ctx context.Context, c *typeCounts, failed, last, canceled bool) {
	c.running.Add(-1)
	m.tel.running.Add(ctx, -1, c.byType...)
	switch {
	case canceled:
	case !failed:
		c.done.Add(1)
		m.tel.attempts.Add(ctx, 1, c.asDone...)
	case last:
		c.dead.Add(1)
		m.tel.attempts.Add(ctx, 1, c.asDie...)
	default:
		c.retried.Add(1)
		m.tel.attempts.Add(ctx, 1, c.asRetry...)
	}
}
