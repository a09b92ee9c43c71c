package telemetry_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/telemetry"
)

type fixedSource struct{}

func (fixedSource) Stats() telemetry.Stats { return telemetry.Stats{} }

func readZero(context.Context) (float64, error) { return 0, nil }

// Every invalid source or option of NewDashboard is refused with
// ErrInvalidDashboard and a message naming it, no dashboard and no
// sampler goroutine; a nil option is skipped.
func TestNewDashboardRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  telemetry.Source
		opts []telemetry.DashboardOption
		says string
	}{
		{"nil source", nil, nil, "source"},
		{"nil pointer source", (*fakeSource)(nil), nil, "source"},
		{"zero sample interval", fixedSource{}, []telemetry.DashboardOption{telemetry.WithSampleEvery(0)}, "sample interval"},
		{"negative sample interval", fixedSource{}, []telemetry.DashboardOption{telemetry.WithSampleEvery(math.MinInt64)}, "sample interval"},
		{"window below the interval", fixedSource{}, []telemetry.DashboardOption{telemetry.WithWindow(time.Millisecond)}, "window"},
		{"negative window", fixedSource{}, []telemetry.DashboardOption{telemetry.WithWindow(-time.Hour)}, "window"},
		{"huge window", fixedSource{}, []telemetry.DashboardOption{telemetry.WithSampleEvery(10 * time.Millisecond), telemetry.WithWindow(math.MaxInt64)}, "window"},
		{"unnamed gauge", fixedSource{}, []telemetry.DashboardOption{telemetry.WithGauge("", readZero)}, "gauge"},
		{"gauge without read", fixedSource{}, []telemetry.DashboardOption{nil, telemetry.WithGauge("depth", nil)}, "gauge"},
		{"duplicate gauges", fixedSource{}, []telemetry.DashboardOption{telemetry.WithGauge("depth", readZero), telemetry.WithGauge("depth", readZero)}, "depth"},
		{"trace URL without %s", fixedSource{}, []telemetry.DashboardOption{telemetry.WithTraceURL("https://traces/")}, "trace URL"},
		{"trace URL with another verb", fixedSource{}, []telemetry.DashboardOption{telemetry.WithTraceURL("https://traces/%s?x=%d")}, "trace URL"},
	} {
		d, err := telemetry.NewDashboard(tc.src, tc.opts...)
		if d != nil || !errors.Is(err, telemetry.ErrInvalidDashboard) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: NewDashboard = %v, %v; want ErrInvalidDashboard saying %q", tc.name, d, err, tc.says)
		}
	}
	d, err := telemetry.NewDashboard(fixedSource{}, nil, telemetry.WithTitle(""), telemetry.WithTraceURL(""))
	if err != nil {
		t.Fatalf("NewDashboard with nil and empty options: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
