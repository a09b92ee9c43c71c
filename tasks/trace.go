package tasks

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/telemetry"
)

// A task's life in the traces, after OpenTelemetry's messaging
// conventions: each enqueue is a PRODUCER span, whose span context the
// queue keeps beside the task (a W3C traceparent, outside its payload:
// see internal/qstore's tracectx.go); each run is a CONSUMER span, a
// child of the recruitment whose slice ran it, linked to the enqueue, or,
// for a chain's next step, to the run of the step before, whose context
// the ack stores with the follow-up, and for a fan-out's final step also
// to its children's runs, whose contexts each child's run keeps with the
// final item (one round trip more per child, with tracing on).

// WithTracerProvider sets the provider of the tracer of a [Client]'s
// enqueue spans and of a [Mux]'s run spans (see
// [github.com/worksteal/worksteal/telemetry]: SpanTaskSend,
// SpanTaskProcess). Default: the otel global, as it is at each enqueue
// and run; nil keeps the default. Until a provider is set, and with a
// no-op one, no span is started and nothing is stored: tracing off costs
// nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) {
		if tp != nil {
			o.tracerProvider = tp
		}
	})
}

// The otel global as this package found it: the default, which delegates
// to the provider that otel.SetTracerProvider sets, if ever. Only while
// it is still the global's provider are all its spans no-ops.
var (
	defaultProvider   = otel.GetTracerProvider()
	defaultDelegating = fmt.Sprintf("%T", defaultProvider) == "*global.tracerProvider"
	defaultTracer     = newTracer(defaultProvider)
)

func newTracer(tp trace.TracerProvider) trace.Tracer {
	return tp.Tracer(telemetry.ScopeName, trace.WithInstrumentationVersion(telemetry.Version))
}

// tracing is the tracer of a Client or a Mux, or none.
type tracing struct {
	tracer trace.Tracer // nil: a no-op provider
	global bool         // the otel global's: off while none is set
}

func newTracing(tp trace.TracerProvider) tracing {
	// The default provider is a pointer, so that comparing it with any
	// provider cannot panic.
	if tp == nil || defaultDelegating && tp == defaultProvider {
		return tracing{tracer: defaultTracer, global: true}
	}
	if _, ok := tp.(noop.TracerProvider); ok {
		return tracing{}
	}
	return tracing{tracer: newTracer(tp)}
}

// on returns the tracer, or nil when its spans would all be no-ops.
func (t tracing) on() trace.Tracer {
	if t.global && defaultDelegating && otel.GetTracerProvider() == defaultProvider {
		return nil
	}
	return t.tracer
}

// sending is the PRODUCER span of one enqueue, or nothing when tracing
// is off (every method is then a no-op).
type sending struct {
	span  trace.Span
	trace string // the span context to store with the tasks, or ""
}

// send starts the span of an enqueue of n tasks of type typ (one the
// first of a chain, step > 0) on c's queue.
func (c *Client) send(ctx context.Context, typ string, n, step int) (context.Context, sending) {
	tracer := c.tracing.on()
	if tracer == nil {
		return ctx, sending{}
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(telemetry.MessagingSystem),
		semconv.MessagingOperationName(telemetry.SpanTaskSend),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(c.q.Name()),
		telemetry.AttrTaskType.String(typ),
	}
	if n > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
	}
	if step > 0 {
		attrs = append(attrs, telemetry.AttrChainStep.Int(step))
	}
	ctx, span := tracer.Start(ctx, telemetry.SpanTaskSend+" "+c.q.Name(),
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, sending{span: span, trace: encodeTrace(span.SpanContext())}
}

// end ends the span, with the id of the task enqueued (of one task, or
// the first of a chain or a fan-out) and the call's error.
func (s sending) end(id string, err error) {
	if s.span == nil {
		return
	}
	if id != "" {
		s.span.SetAttributes(semconv.MessagingMessageID(id))
	}
	endSpan(s.span, err)
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// handlerOf is what a Mux's job calls per item (Mux.run).
type handlerOf func(ctx context.Context, st *qstore.Store, it qstore.Item) ([]byte, *qstore.FollowUp, error)

// traced runs the task of item it with run, inside its CONSUMER span
// when tracing is on: a child of ctx's span (the recruitment's), linked
// to the span that enqueued it, which for a chain's next step is the run
// of the step before. The next step that run returns carries this span's
// context, for its own link. A panic ends the span as an error and goes
// on to the drain, which recovers it.
func (m *Mux) traced(ctx context.Context, st *qstore.Store, it qstore.Item, run handlerOf) (result []byte, next *qstore.FollowUp, err error) {
	tracer := m.tracing.on()
	if tracer == nil {
		return run(ctx, st, it)
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(telemetry.MessagingSystem),
		semconv.MessagingOperationName(telemetry.SpanTaskProcess),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(st.Name()),
		semconv.MessagingMessageID(it.ID),
		telemetry.AttrTaskAttempt.Int(it.Attempt),
	}
	// The envelope's type and step, for the attributes; run decodes it
	// again, and says what is wrong with one that does not decode.
	if env, err := taskenv.Decode(it.Payload); err == nil {
		attrs = append(attrs, telemetry.AttrTaskType.String(env.Type))
		if env.Chain != nil {
			attrs = append(attrs, telemetry.AttrChainStep.Int(env.Chain.Step))
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	enqueued, children := qstore.SplitTrace(it.Trace)
	if sc := decodeTrace(enqueued); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	for _, child := range children { // a fan-out's final step
		if sc := decodeTrace(child); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, span := tracer.Start(ctx, telemetry.SpanTaskProcess+" "+st.Name(), opts...)
	returned := false
	defer func() {
		if !returned {
			endSpan(span, fmt.Errorf("tasks: handler of %s panicked", it.ID))
		}
	}()
	result, next, err = run(ctx, st, it)
	returned = true
	if next != nil {
		next.Trace = encodeTrace(span.SpanContext())
	}
	if err == nil && st != nil && strings.Contains(it.ID, ".") {
		// A fan-out's child: its run is kept for the final step's links,
		// best effort (its trace only is at stake).
		if kerr := st.KeepChildTrace(ctx, it.ID, encodeTrace(span.SpanContext())); kerr != nil {
			span.AddEvent("the run's context was not kept for the fan-out's final step", trace.WithAttributes(attribute.String("error", kerr.Error())))
		}
	}
	endSpan(span, err)
	return result, next, err
}

// encodeTrace is sc as a W3C traceparent ("00-trace id-span id-flags"),
// sampled or not, so that the runs' sampling follows the enqueue's; ""
// for an invalid sc. Its tracestate is not kept.
func encodeTrace(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	return "00-" + tid.String() + "-" + sid.String() + "-" + sc.TraceFlags().String()
}

// decodeTrace reads encodeTrace's form; anything else is the invalid
// span context.
func decodeTrace(s string) trace.SpanContext {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex(s[3:35])
	sid, err2 := trace.SpanIDFromHex(s[36:52])
	flags, err := strconv.ParseUint(s[53:], 16, 8)
	if err != nil || err1 != nil || err2 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags), Remote: true})
}
