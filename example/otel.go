package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// serviceName is the resource's service.name unless OTEL_SERVICE_NAME says
// otherwise.
const serviceName = "worksteal-example"

// otelSetup holds the providers the recruiter and the instrumentation of
// each stack share, and what serves them.
type otelSetup struct {
	meters      *sdkmetric.MeterProvider
	tracers     *sdktrace.TracerProvider
	propagators propagation.TextMapPropagator
	metrics     http.Handler // Prometheus exposition (OpenMetrics with exemplars when asked), mounted at /metrics on the admin port
}

// setupOtel makes an SDK MeterProvider read by a Prometheus exporter, and
// an SDK TracerProvider that exports over OTLP when the standard
// OTEL_EXPORTER_OTLP_* variables ask for it. Without them spans are still
// recorded (the dashboard shows their trace ids) but go nowhere. Nothing
// is global: each provider is handed to whoever needs it.
func setupOtel(ctx context.Context, out io.Writer) (*otelSetup, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}

	reg := prometheus.NewRegistry()
	prom, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	s := &otelSetup{
		meters:      sdkmetric.NewMeterProvider(sdkmetric.WithReader(prom), sdkmetric.WithResource(res)),
		propagators: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		// OpenMetrics when the scraper asks for it (Prometheus does): the
		// only format that carries exemplars, the trace ids of recruit
		// spans on worksteal.slice.duration's buckets.
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}),
	}

	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	endpoint := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if endpoint != "" {
		exp, protocol, err := otlpExporter(ctx)
		if err != nil {
			return nil, errors.Join(err, s.meters.Shutdown(ctx))
		}
		topts = append(topts, sdktrace.WithBatcher(exp))
		fmt.Fprintf(out, "traces: OTLP %s to %s\n", protocol, endpoint)
	} else {
		fmt.Fprintln(out, "traces: recorded, not exported (set OTEL_EXPORTER_OTLP_ENDPOINT to export them over OTLP)")
	}
	s.tracers = sdktrace.NewTracerProvider(topts...)
	return s, nil
}

// otlpExporter picks the exporter of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL; http/protobuf by default, as the
// specification says. The exporters read the endpoint, headers, TLS and
// timeout variables themselves.
func otlpExporter(ctx context.Context) (sdktrace.SpanExporter, string, error) {
	protocol := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, "", fmt.Errorf("OTLP protocol %q: this example exports grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, "", fmt.Errorf("OTLP %s exporter: %w", protocol, err)
	}
	return exp, protocol, nil
}

// shutdown flushes the spans still batched and stops both providers.
func (s *otelSetup) shutdown(ctx context.Context) error {
	return errors.Join(s.tracers.Shutdown(ctx), s.meters.Shutdown(ctx))
}
