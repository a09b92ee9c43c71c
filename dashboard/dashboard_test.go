package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/recruiter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource is a Source whose counters the test moves by hand.
type fakeSource struct {
	mu    sync.Mutex
	stats recruiter.Stats
	calls chan struct{} // if set, receives one value per Stats call (dropped when full)
}

func (f *fakeSource) Stats() recruiter.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls != nil {
		select {
		case f.calls <- struct{}{}:
		default:
		}
	}
	s := f.stats
	s.Jobs = slices.Clone(s.Jobs)
	s.Recent = slices.Clone(s.Recent)
	return s
}

// setItems sets the Items counter of job, adding the job if it is new.
func (f *fakeSource) setItems(job string, items uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.stats.Jobs {
		if f.stats.Jobs[i].Name == job {
			f.stats.Jobs[i].Items = items
			return
		}
	}
	f.stats.Jobs = append(f.stats.Jobs, recruiter.JobStats{Name: job, Rate: 0.1, Budget: 50 * time.Millisecond, Items: items})
}

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// manual returns a dashboard without its sampler goroutine, closed at cleanup.
func manual(t testing.TB, src dashboard.Source, opts ...dashboard.Option) *dashboard.Dashboard {
	t.Helper()
	d, err := dashboard.NewManual(src, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// getJSON serves the dashboard's JSON document and decodes it into the
// exported type, as a script would.
func getJSON(t *testing.T, h http.Handler) dashboard.Document {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET ?format=json: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q, want JSON", ct)
	}
	var doc dashboard.Document
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decoding the document: %v", err)
	}
	return doc
}

func TestDashboardRatesFromCounterDeltas(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	src.setItems("tidy", 1000) // counted before the dashboard started: no rate for it
	src.setItems("drain", 0)
	d := manual(t, src)

	d.SampleAt(t0)
	src.setItems("tidy", 1050)
	src.setItems("drain", 10)
	d.SampleAt(t0.Add(2 * time.Second))
	src.setItems("tidy", 4) // a new recruiter behind the source: its 4 items are the delta
	src.setItems("drain", 10)
	d.SampleAt(t0.Add(4 * time.Second))
	src.setItems("promote", 30) // registered since the last sample: counted from zero
	d.SampleAt(t0.Add(4500 * time.Millisecond))

	doc := getJSON(t, d)
	want := []map[string]float64{
		{},
		{"tidy": 25, "drain": 5},
		{"tidy": 2, "drain": 0},
		{"tidy": 0, "drain": 0, "promote": 60},
	}
	if len(doc.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(doc.Samples), len(want))
	}
	for i, s := range doc.Samples {
		if !s.Time.Equal(t0.Add([]time.Duration{0, 2 * time.Second, 4 * time.Second, 4500 * time.Millisecond}[i])) {
			t.Errorf("sample %d at %v", i, s.Time)
		}
		if len(s.ItemsPerSecond) != len(want[i]) {
			t.Errorf("sample %d: rates %v, want %v", i, s.ItemsPerSecond, want[i])
		}
		for job, r := range want[i] {
			if got, ok := s.ItemsPerSecond[job]; !ok || math.Abs(got-r) > 1e-9 {
				t.Errorf("sample %d: %s at %v items/s (present %v), want %v", i, job, got, ok, r)
			}
		}
	}
	if r := doc.Jobs[2].ItemsPerSecond; doc.Jobs[2].Name != "promote" || r == nil || *r != 60 {
		t.Errorf("the latest rate of promote is %v, want 60", r)
	}
}

func TestDashboardSameTimeTwiceHasNoRate(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	src.setItems("tidy", 0)
	d := manual(t, src)
	d.SampleAt(t0)
	src.setItems("tidy", 5)
	d.SampleAt(t0) // no time elapsed: no division by zero, no infinite rate
	doc := getJSON(t, d)
	if len(doc.Samples) != 2 || len(doc.Samples[1].ItemsPerSecond) != 0 {
		t.Fatalf("samples %+v, want a second one without rates", doc.Samples)
	}
}

func TestDashboardWindowBoundsTheSamples(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	src.setItems("tidy", 0)
	d := manual(t, src, dashboard.WithSampleEvery(time.Second), dashboard.WithWindow(5*time.Second))
	for i := range 12 {
		src.setItems("tidy", uint64(i*i))
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	doc := getJSON(t, d)
	if len(doc.Samples) != 5 {
		t.Fatalf("%d samples kept, want window/interval = 5", len(doc.Samples))
	}
	for i, s := range doc.Samples {
		n := 7 + i // the samples of seconds 7 to 11, oldest first
		if !s.Time.Equal(t0.Add(time.Duration(n) * time.Second)) {
			t.Errorf("sample %d at %v, want second %d", i, s.Time, n)
		}
		if want := float64(n*n - (n-1)*(n-1)); s.ItemsPerSecond["tidy"] != want {
			t.Errorf("sample %d: %v items/s, want %v", i, s.ItemsPerSecond["tidy"], want)
		}
	}
	if doc.WindowMS != 5000 || doc.SampleEveryMS != 1000 {
		t.Errorf("window %vms, every %vms; want 5000 and 1000", doc.WindowMS, doc.SampleEveryMS)
	}
}

func TestDashboardGaugeFailuresAreGaps(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	flaky := func(context.Context) (float64, error) {
		if n := calls.Add(1); n%2 == 0 {
			return 0, errors.New("redis: connection refused")
		} else {
			return float64(n * 10), nil
		}
	}
	d := manual(t, &fakeSource{},
		dashboard.WithGauge("queue depth", flaky),
		dashboard.WithGauge("nan", func(context.Context) (float64, error) { return math.NaN(), nil }),
		dashboard.WithGauge("panics", func(context.Context) (float64, error) { panic("gauge bug") }),
	)
	for i := range 3 {
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	doc := getJSON(t, d)
	if !slices.Equal(doc.Gauges, []string{"queue depth", "nan", "panics"}) {
		t.Fatalf("gauges %v", doc.Gauges)
	}
	wantDepth := []*float64{ptr(10.0), nil, ptr(30.0)}
	for i, s := range doc.Samples {
		got := s.Gauges["queue depth"]
		if (got == nil) != (wantDepth[i] == nil) || got != nil && *got != *wantDepth[i] {
			t.Errorf("sample %d: queue depth %v, want %v", i, deref(got), deref(wantDepth[i]))
		}
		for _, name := range []string{"nan", "panics"} {
			if v, ok := s.Gauges[name]; !ok || v != nil {
				t.Errorf("sample %d: %s = %v (present %v), want null", i, name, deref(v), ok)
			}
		}
	}
}

func TestDashboardSlowGaugeIsCutAtItsTimeout(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 2)
	honest := func(ctx context.Context) (float64, error) { // waits, but honours its context
		<-ctx.Done()
		ended <- ctx.Err()
		return 1, ctx.Err()
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var stubbornCalls atomic.Int64
	stubborn := func(context.Context) (float64, error) { // ignores its context
		stubbornCalls.Add(1)
		<-release
		return 1, nil
	}
	d := manual(t, &fakeSource{}, dashboard.WithSampleEvery(20*time.Millisecond), dashboard.WithWindow(time.Second),
		dashboard.WithGauge("honest", honest), dashboard.WithGauge("stubborn", stubborn))

	// Each call returning at all is the point: neither gauge holds the sampler.
	d.SampleAt(t0)
	d.SampleAt(t0.Add(time.Second))
	doc := getJSON(t, d)
	for i, s := range doc.Samples {
		if s.Gauges["honest"] != nil || s.Gauges["stubborn"] != nil {
			t.Errorf("sample %d: gauges %v, want nulls", i, s.Gauges)
		}
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the slow gauge's context ended with %v, want its deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the slow gauge's context never ended")
	}
	if n := stubbornCalls.Load(); n != 1 {
		t.Errorf("the stubborn gauge was called %d times; want 1: no second read while one is pending", n)
	}
}

func TestDashboardOptionErrors(t *testing.T) {
	t.Parallel()
	read := func(context.Context) (float64, error) { return 0, nil }
	for _, tc := range []struct {
		name string
		src  dashboard.Source
		opts []dashboard.Option
		want string
	}{
		{"nil source", nil, nil, "source is nil"},
		{"nil pointer source", (*fakeSource)(nil), nil, "source is nil"},
		{"fast sampling", &fakeSource{}, []dashboard.Option{dashboard.WithSampleEvery(time.Millisecond)}, "sample interval 1ms is under 10ms"},
		{"short window", &fakeSource{}, []dashboard.Option{dashboard.WithWindow(500 * time.Millisecond)}, "window 500ms is shorter than the sample interval 1s"},
		{"huge window", &fakeSource{}, []dashboard.Option{dashboard.WithSampleEvery(10 * time.Millisecond), dashboard.WithWindow(time.Hour)}, "keeps 360000 samples, more than 10000"},
		{"unnamed gauge", &fakeSource{}, []dashboard.Option{dashboard.WithGauge("", read)}, "a gauge needs a name"},
		{"gauge without read", &fakeSource{}, []dashboard.Option{dashboard.WithGauge("depth", nil)}, `a gauge needs a name and a read function (got "depth")`},
		{"twin gauges", &fakeSource{}, []dashboard.Option{dashboard.WithGauge("depth", read), dashboard.WithGauge("depth", read)}, `two gauges are named "depth"`},
		{"trace URL without %s", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://jaeger/trace/")}, "must hold one %s"},
		{"trace URL with %d", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://jaeger/%d/%s")}, "no other %"},
		{"trace URL with a single % before hex", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://grafana/explore?left=%7B%s")}, "no other % but %%"},
		{"trace URL with two %s", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://jaeger/%s/%s")}, "must hold one %s"},
		{"trace URL with %%s only", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://jaeger/%%s")}, "must hold one %s"},
		{"trace URL ending in %", &fakeSource{}, []dashboard.Option{dashboard.WithTraceURL("http://jaeger/%s%")}, "no other %"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := dashboard.New(tc.src, tc.opts...)
			if err == nil {
				d.Close()
				t.Fatal("New accepted it")
			}
			if !errors.Is(err, dashboard.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want ErrInvalidOption saying %q", err, tc.want)
			}
		})
	}
}

// Not parallel: goleak compares the goroutines before and after, and
// parallel tests are paused while this one runs.
func TestDashboardCloseStopsTheSampler(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := &fakeSource{calls: make(chan struct{}, 1)}
	src.setItems("tidy", 0)
	d, err := dashboard.New(src, dashboard.WithSampleEvery(10*time.Millisecond), dashboard.WithWindow(time.Second),
		dashboard.WithGauge("depth", func(ctx context.Context) (float64, error) { return 3, nil }))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the first sample at once, then the ticker's
		select {
		case <-src.calls:
		case <-time.After(30 * time.Second):
			t.Fatal("the sampler did not sample")
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	n := len(getJSON(t, d).Samples)
	if n < 2 {
		t.Fatalf("%d samples before Close, want at least 2", n)
	}
	// The handler still serves what was sampled.
	if again := len(getJSON(t, d).Samples); again != n {
		t.Fatalf("samples went from %d to %d after Close", n, again)
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A gauge that answered is free for the next sample at once: the sampler
// must not see its read as still pending (a gap), however soon the next
// sample follows.
func TestDashboardGaugeAnsweredIsReadAgain(t *testing.T) {
	t.Parallel()
	d := manual(t, &fakeSource{}, dashboard.WithWindow(time.Hour),
		dashboard.WithGauge("one", func(context.Context) (float64, error) { return 1, nil }))
	const samples = 1000
	for i := range samples {
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	doc := getJSON(t, d)
	gaps := 0
	for _, s := range doc.Samples {
		if s.Gauges["one"] == nil {
			gaps++
		}
	}
	if len(doc.Samples) != samples || gaps != 0 {
		t.Errorf("%d samples with %d gaps; want %d without a gap", len(doc.Samples), gaps, samples)
	}
}

// jobRows returns a job's row of the jobs table and its row of the pacer
// internals, one after the other.
func jobRows(page, job string) string {
	q := regexp.QuoteMeta(job)
	return regexp.MustCompile(`(?s)<tr data-job="`+q+`".*?</tr>`).FindString(page) +
		regexp.MustCompile(`(?s)<tr data-pacer="`+q+`".*?</tr>`).FindString(page)
}

// jobsNote returns the pacer's legend.
func jobsNote(page string) string {
	return regexp.MustCompile(`(?s)<dl class="note" id="jobs-note">.*?</dl>`).FindString(page)
}
