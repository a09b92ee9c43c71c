package dashboard

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// layoutChart must stay finite and bounded whatever its series hold, even
// values no gauge lets through.
func TestLayoutChartExtremeValues(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	times := []time.Time{now.Add(-4 * time.Second), now.Add(-3 * time.Second), now.Add(-2 * time.Second), now.Add(-time.Second), now}
	for _, values := range [][]float64{
		{math.MaxFloat64, 5, math.NaN(), math.Inf(1), 7},
		{-math.MaxFloat64, 5, math.Inf(-1), 6, 7},
		{math.MaxFloat64, -math.MaxFloat64, 5, 6, 7},
		{gaugeLimit, -gaugeLimit, 5, 6, 7},
	} {
		laid := make(chan chartView, 1)
		go func() {
			laid <- layoutChart("g", 960, 170, now, time.Minute, time.Second, times, []series{{name: "g", color: "c0", values: values}})
		}()
		var c chartView
		select {
		case c = <-laid:
		case <-time.After(5 * time.Second):
			t.Fatalf("layoutChart(%v) did not return within 5 s", values)
		}
		if len(c.YTicks) < 2 || len(c.YTicks) > maxYTicks+1 {
			t.Errorf("%v: %d ticks, want 2 to %d", values, len(c.YTicks), maxYTicks+1)
		}
		for _, tk := range c.YTicks {
			if !isFinite(tk.At) || tk.At < c.Top-0.5 || tk.At > c.Bottom+0.5 || strings.Contains(tk.Label, "Inf") {
				t.Errorf("%v: tick %+v off the plot [%v, %v]", values, tk, c.Top, c.Bottom)
			}
		}
		if line := c.Series[0].Line; line == "" || strings.Contains(line, "Inf") || strings.Contains(line, "NaN") {
			t.Errorf("%v: line %q", values, line)
		}
	}
}

// A series with gaps between most samples costs at most a subpath per
// column, not one per sample.
func TestLayoutChartFlakySeriesIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	const n = 6000
	times := make([]time.Time, n)
	values := make([]float64, n)
	for i := range n {
		times[i] = now.Add(time.Duration(i-n+1) * 100 * time.Millisecond)
		values[i] = float64(i % 10)
		if i%2 == 1 {
			values[i] = math.NaN()
		}
	}
	c := layoutChart("g", 960, 170, now, 10*time.Minute, 100*time.Millisecond, times, []series{{name: "g", values: values}})
	columns := int(c.Right-c.Left)/columnWidth + 1
	if m := strings.Count(c.Series[0].Line, "M"); m > columns || m < columns/2 {
		t.Errorf("%d subpaths for %d columns, want at most one each", m, columns)
	}
	if c.Points != n/2 {
		t.Errorf("%d samples counted, want %d", c.Points, n/2)
	}
}

// A sparkline stays in its box and finite whatever its values, and a
// flaky series costs at most a subpath per column.
func TestSparklineBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	const n = 6000
	times := make([]time.Time, n)
	values := make([]float64, n)
	for i := range n {
		times[i] = now.Add(time.Duration(i-n+1) * 100 * time.Millisecond)
		values[i] = float64(i%10) / 100
		switch i % 4 {
		case 1:
			values[i] = math.NaN()
		case 3:
			values[i] = math.Inf(1)
		}
	}
	values[n-2] = math.MaxFloat64
	path := sparkline(now, 10*time.Minute, 100*time.Millisecond, times, values)
	if m := strings.Count(path, "M"); m == 0 || m > sparkW/columnWidth+1 {
		t.Errorf("%d subpaths for %d columns, want one to one each", m, sparkW/columnWidth+1)
	}
	if strings.Contains(path, "NaN") || strings.Contains(path, "Inf") {
		t.Errorf("path %q", path)
	}
	for _, m := range regexp.MustCompile(`[ML]([-\d.]+),([-\d.]+)`).FindAllStringSubmatch(path, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		if x < 0 || x > sparkW || y < 0 || y > sparkH {
			t.Fatalf("point %v,%v outside the %dx%d box", x, y, sparkW, sparkH)
		}
	}
	if got := sparkline(now, time.Minute, time.Second, nil, nil); got != "" {
		t.Errorf("no samples: path %q, want none", got)
	}
	if got := sparkline(now, time.Minute, time.Second, times[n-1:], []float64{0.3}); got != "M64,1h0" {
		t.Errorf("one sample: path %q, want a dot at the top right", got)
	}
}
