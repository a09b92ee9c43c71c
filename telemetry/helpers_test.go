package telemetry_test

import (
	"context"

	oteltrace "go.opentelemetry.io/otel/trace"
)

// trace returns the id of the span that ctx carries.
func trace(ctx context.Context) string {
	return oteltrace.SpanContextFromContext(ctx).SpanID().String()
}
