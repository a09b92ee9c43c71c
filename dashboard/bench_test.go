package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDashboardPage renders the HTML page (the one each open tab
// fetches at every refresh) and the JSON document, for the default window
// of 10 minutes at 1 s (600 samples) and 8 jobs with noisy counters.
func BenchmarkDashboardPage(b *testing.B) {
	const samples, jobs = 600, 8
	src := &fakeSource{}
	d := manual(b, src)
	items := make([]uint64, jobs)
	for i := range samples {
		for j := range items {
			items[j] += uint64((i*7 + j*13) % 50)
			src.setItems("job-"+strconv.Itoa(j), items[j])
		}
		d.SampleAt(t0.Add(time.Duration(i) * time.Second))
	}
	d.SetClock(func() time.Time { return t0.Add((samples - 1) * time.Second) })
	for _, tc := range []struct{ name, accept string }{{"html", "text/html"}, {"json", "application/json"}} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Accept", tc.accept)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				d.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
