package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/dashboard"
)

// Document returns the value the handler serves as JSON: encoded the
// same way, the two are the same bytes.
func TestDashboardDocumentIsWhatItServes(t *testing.T) {
	t.Parallel()
	src := busySource(t0)
	d := manual(t, src, dashboard.WithTitle("catalog"), dashboard.WithTraceURL("http://jaeger:16686/trace/%s"),
		dashboard.WithGauge("queue depth", func(context.Context) (float64, error) { return 7, nil }))
	d.SetClock(func() time.Time { return t0.Add(5 * time.Second) })
	d.SampleAt(t0)
	d.SampleAt(t0.Add(4 * time.Second))

	doc, err := d.Document()
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	if doc.Title != "catalog" || !doc.Now.Equal(t0.Add(5*time.Second)) || len(doc.Jobs) != 2 || doc.Jobs[0].Name != "tidy-stale" ||
		len(doc.Samples) != 2 || *doc.Samples[1].Gauges["queue depth"] != 7 {
		t.Errorf("Document = title %q, now %v, %d jobs, %d samples; want catalog, t0+5s, 2 jobs (tidy-stale first), 2 samples with the gauge at 7",
			doc.Title, doc.Now, len(doc.Jobs), len(doc.Samples))
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatalf("encoding the document: %v", err)
	}
	served := get(t, d, http.MethodGet, "/?format=json")
	if served.Code != http.StatusOK || served.Body.String() != want.String() {
		t.Errorf("served %d:\n%s\nwant the encoded Document:\n%s", served.Code, served.Body, want.String())
	}
}

func TestDashboardDocumentFailsWhenTheSourcePanics(t *testing.T) {
	t.Parallel()
	src := &panickySource{}
	src.setItems("tidy", 0)
	d := manual(t, src)
	src.panicking.Store(true)
	doc, err := d.Document()
	if err == nil || !strings.Contains(err.Error(), "dashboard: the source panicked: source bug") {
		t.Errorf("Document while the source panics: %v, want an error saying so", err)
	}
	if doc.Jobs != nil || doc.Title != "" {
		t.Errorf("Document while the source panics = %+v, want the zero Document", doc)
	}
}
