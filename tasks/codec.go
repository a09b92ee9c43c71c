package tasks

import (
	"context"
	"encoding/json"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Codec turns a task's arguments and results into bytes and back. Its
// Name travels in every task's envelope, so a [Mux] refuses a task that a
// [Client] encoded with another codec (an error wrapping [ErrDecode])
// rather than misreading it. The name is 1 to 128 bytes of
// [A-Za-z0-9._-], and it must not change while tasks encoded under it
// are queued. A Codec must be safe for concurrent use.
type Codec interface {
	Name() string
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// jsonCodec is the default Codec: encoding/json, named "json".
type jsonCodec struct{}

func (jsonCodec) Name() string                       { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Option configures a [Mux] or a [Client]; a nil Option is ignored.
type Option interface{ apply(*options) }

type options struct {
	codec          Codec
	meterProvider  metric.MeterProvider
	logger         *slog.Logger                                      // WithLogger's
	onDead         func(ctx context.Context, task Info, cause error) // WithDeadLetterHook's
	tracerProvider trace.TracerProvider                              // WithTracerProvider's
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithCodec sets the codec of arguments and results. Default: JSON
// (encoding/json, named "json"); a nil Codec keeps the default. The
// [Client] that enqueues a task and the [Mux] that runs it must use codecs
// of the same name.
func WithCodec(c Codec) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.codec = c
		}
	})
}

// WithMeterProvider sets the provider of the [Mux]'s meter, which counts
// task attempts by type and outcome and those running (see
// [github.com/worksteal/worksteal/telemetry]). Default: the otel global;
// nil keeps the default. A [Client] ignores it. [WithTracerProvider] sets
// the tracer's.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) {
		if mp != nil {
			o.meterProvider = mp
		}
	})
}

func newOptions(opts []Option) options {
	o := options{codec: jsonCodec{}}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}
