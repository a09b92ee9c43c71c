package dashboard_test

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

// A gauge at the edge of float64 once made the axis round to infinity and
// its tick loop never end: every request spun, eating memory.
func TestDashboardHugeGaugesRender(t *testing.T) {
	t.Parallel()
	huge := func(v float64) func(context.Context) (float64, error) {
		return func(context.Context) (float64, error) { return v, nil }
	}
	src := &fakeSource{}
	src.setItems("tidy", 0)
	d := manual(t, src,
		dashboard.WithGauge("max", huge(math.MaxFloat64)), dashboard.WithGauge("min", huge(-math.MaxFloat64)),
		dashboard.WithGauge("big", huge(1e299)), dashboard.WithGauge("small", huge(-1e299)))
	d.SetClock(func() time.Time { return t0.Add(2 * time.Second) })
	for i := range 3 {
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	served := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		served <- rec
	}()
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the page with huge gauges did not render within 5 s")
	}
	page := rec.Body.String()
	if rec.Code != http.StatusOK || strings.Contains(page, "Inf") || strings.Contains(page, "NaN") {
		t.Fatalf("GET: %d, %d bytes, Inf or NaN in it: %v", rec.Code, len(page), strings.Contains(page, "Inf") || strings.Contains(page, "NaN"))
	}
	// ±MaxFloat64 are gaps; ±1e299 can be charted, and are.
	doc := getJSON(t, d)
	for i, s := range doc.Samples {
		if s.Gauges["max"] != nil || s.Gauges["min"] != nil || deref(s.Gauges["big"]) != 1e299 || deref(s.Gauges["small"]) != -1e299 {
			t.Errorf("sample %d: gauges max %v, min %v, big %v, small %v; want null, null, 1e299, -1e299", i,
				deref(s.Gauges["max"]), deref(s.Gauges["min"]), deref(s.Gauges["big"]), deref(s.Gauges["small"]))
		}
	}
	if n := strings.Count(page, `<path class="series" data-series="big" d="M`); n != 1 {
		t.Errorf("the 1e299 gauge has %d lines, want 1", n)
	}
}

// A long window of many jobs is reduced to the chart's width: the page's
// size depends on the chart, not on the samples.
func TestDashboardManySamplesPageStaysSmall(t *testing.T) {
	t.Parallel()
	const samples, jobs = 6000, 8
	every := 100 * time.Millisecond
	src := &fakeSource{}
	d := manual(t, src, dashboard.WithSampleEvery(every), dashboard.WithWindow(samples*every))
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]uint64, jobs)
	spikeAt := 4321
	for i := range samples {
		for j := range items {
			items[j] += uint64(rng.IntN(50)) // noisy: every column has a low and a high
			if j == 0 && i == spikeAt {
				items[j] += 100_000 // one sample's spike: 1,000,000/s
			}
			src.setItems("job-"+strconv.Itoa(j), items[j])
		}
		d.SampleAt(t0.Add(time.Duration(i) * every))
	}
	end := t0.Add((samples - 1) * every)
	d.SetClock(func() time.Time { return end })

	page := get(t, d, http.MethodGet, "/").Body.String()
	t.Logf("the page is %d bytes", len(page))
	if len(page) > 300_000 {
		t.Errorf("the page is %d bytes, want at most 300,000", len(page))
	}
	const plotWidth = 960 - 52 - 14 // the rate chart's plot area, in viewBox units
	lines := regexp.MustCompile(`<path class="series" data-series="(job-\d)" d="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(lines) != jobs {
		t.Fatalf("%d lines, want %d", len(lines), jobs)
	}
	for _, m := range lines {
		pts := parsePath(t, m[2])
		if len(pts) > 2*plotWidth || len(pts) < plotWidth/4 {
			t.Errorf("%s: %d points, want between %d and %d (2 per pixel at most)", m[1], len(pts), plotWidth/4, 2*plotWidth)
		}
		if strings.Count(m[2], "M") != 1 {
			t.Errorf("%s: %d subpaths, want one: no sample is a gap", m[1], strings.Count(m[2], "M"))
		}
	}
	// The spike survives the reduction: job-0's highest point is the top
	// of the axis, 1,000,000/s.
	top := math.Inf(1)
	for _, p := range parsePath(t, lines[0][2]) {
		top = math.Min(top, p[1])
	}
	if !strings.Contains(page, `text-anchor="end">1M<`) {
		t.Fatalf("no 1M tick on the axis")
	}
	m := regexp.MustCompile(`y="([\d.]+)" dx="-8" dy="4" text-anchor="end">1M<`).FindStringSubmatch(page)
	if y, _ := strconv.ParseFloat(m[1], 64); math.Abs(y-top) > 0.2 {
		t.Errorf("job-0's highest point is at y=%v, want the spike at the 1M tick, y=%v", top, y)
	}
	// JSON keeps every sample.
	if doc := getJSON(t, d); len(doc.Samples) != samples || doc.Samples[spikeAt].ItemsPerSecond["job-0"] < 1e6 {
		t.Errorf("JSON has %d samples, want %d with the spike", len(doc.Samples), samples)
	}
}

func TestDashboardTraceURLFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, want string }{
		{"http://jaeger:16686/trace/%s", "http://jaeger:16686/trace/" + traceA},
		{"http://grafana:3000/explore?left=%%7B%%22query%%22:%%22%s%%22%%7D&x=100%%",
			"http://grafana:3000/explore?left=%7B%22query%22:%22" + traceA + "%22%7D&x=100%"},
		{"%s", traceA},
	} {
		d := manual(t, busySource(time.Now()), dashboard.WithTraceURL(tc.format))
		if got := getJSON(t, d).Recent[0].TraceURL; got != tc.want {
			t.Errorf("WithTraceURL(%q) links %q, want %q", tc.format, got, tc.want)
		}
	}
}

// panickySource panics in Stats while panicking is set.
type panickySource struct {
	fakeSource
	panicking atomic.Bool
}

func (p *panickySource) Stats() recruiter.Stats {
	panicking := p.panicking.Load()
	s := p.fakeSource.Stats() // signals the call
	if panicking {
		panic("source bug")
	}
	return s
}

func TestDashboardSourcePanicSkipsTheSample(t *testing.T) {
	t.Parallel()
	src := &panickySource{}
	src.setItems("tidy", 0)
	d := manual(t, src)
	d.SampleAt(t0)
	src.panicking.Store(true)
	d.SampleAt(t0.Add(time.Second))
	if rec := get(t, d, http.MethodGet, "/"); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "source panicked: source bug") {
		t.Errorf("GET while the source panics: %d %q, want 500 saying so", rec.Code, rec.Body)
	}
	src.panicking.Store(false)
	src.setItems("tidy", 40)
	d.SampleAt(t0.Add(2 * time.Second))
	doc := getJSON(t, d)
	if doc.SamplesSkipped != 1 || len(doc.Samples) != 2 || doc.Samples[1].ItemsPerSecond["tidy"] != 20 {
		t.Errorf("skipped %d, samples %+v; want 1 skipped and a rate of 20/s over the 2 s since the last sample", doc.SamplesSkipped, doc.Samples)
	}
}

// Not parallel: goleak. Without the recovery, the sampler's panic ends
// the test binary.
func TestDashboardSamplerSurvivesASourcePanic(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := &panickySource{fakeSource: fakeSource{calls: make(chan struct{}, 1)}}
	src.panicking.Store(true)
	d, err := dashboard.New(src, dashboard.WithSampleEvery(10*time.Millisecond), dashboard.WithWindow(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-src.calls:
		case <-time.After(30 * time.Second):
			t.Fatal("the sampler did not sample")
		}
	}
	src.panicking.Store(false)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if doc := getJSON(t, d); doc.SamplesSkipped < 2 || int(doc.SamplesSkipped)+len(doc.Samples) < 2 {
		t.Errorf("%d samples skipped, %d taken; want the first 2 skipped", doc.SamplesSkipped, len(doc.Samples))
	}
}
