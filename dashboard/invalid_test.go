package dashboard_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

type fixedSource struct{}

func (fixedSource) Stats() recruiter.Stats { return recruiter.Stats{} }

func readZero(context.Context) (float64, error) { return 0, nil }

// Every invalid source or option of New is refused with
// ErrInvalidOption and a message naming it, no dashboard and no
// sampler goroutine; a nil option is skipped.
func TestNewDashboardRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  dashboard.Source
		opts []dashboard.Option
		says string
	}{
		{"nil source", nil, nil, "source"},
		{"nil pointer source", (*fakeSource)(nil), nil, "source"},
		{"zero sample interval", fixedSource{}, []dashboard.Option{dashboard.WithSampleEvery(0)}, "sample interval"},
		{"negative sample interval", fixedSource{}, []dashboard.Option{dashboard.WithSampleEvery(math.MinInt64)}, "sample interval"},
		{"window below the interval", fixedSource{}, []dashboard.Option{dashboard.WithWindow(time.Millisecond)}, "window"},
		{"negative window", fixedSource{}, []dashboard.Option{dashboard.WithWindow(-time.Hour)}, "window"},
		{"huge window", fixedSource{}, []dashboard.Option{dashboard.WithSampleEvery(10 * time.Millisecond), dashboard.WithWindow(math.MaxInt64)}, "window"},
		{"unnamed gauge", fixedSource{}, []dashboard.Option{dashboard.WithGauge("", readZero)}, "gauge"},
		{"gauge without read", fixedSource{}, []dashboard.Option{nil, dashboard.WithGauge("depth", nil)}, "gauge"},
		{"duplicate gauges", fixedSource{}, []dashboard.Option{dashboard.WithGauge("depth", readZero), dashboard.WithGauge("depth", readZero)}, "depth"},
		{"trace URL without %s", fixedSource{}, []dashboard.Option{dashboard.WithTraceURL("https://traces/")}, "trace URL"},
		{"trace URL with another verb", fixedSource{}, []dashboard.Option{dashboard.WithTraceURL("https://traces/%s?x=%d")}, "trace URL"},
	} {
		d, err := dashboard.New(tc.src, tc.opts...)
		if d != nil || !errors.Is(err, dashboard.ErrInvalidOption) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: New = %v, %v; want ErrInvalidOption saying %q", tc.name, d, err, tc.says)
		}
	}
	d, err := dashboard.New(fixedSource{}, nil, dashboard.WithTitle(""), dashboard.WithTraceURL(""))
	if err != nil {
		t.Fatalf("New with nil and empty options: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
