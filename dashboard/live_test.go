package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/worksteal/worksteal/dashboard"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// liveRecruiter starts a Redis and a recruiter on it with a recording
// tracer, so recruitments carry trace ids; both end at cleanup.
func liveRecruiter(t *testing.T, cfg recruiter.Config) *recruiter.Recruiter {
	t.Helper()
	srv := redistest.Start(t)
	tp := sdktrace.NewTracerProvider()
	cfg.Prefix = redistest.Prefix(t)
	cfg.TracerProvider = tp
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rec, err := recruiter.New(srv.Client(t), cfg)
	if err != nil {
		t.Fatalf("recruiter.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		_ = tp.Shutdown(ctx)
	})
	return rec
}

func TestDashboardShowsALiveRecruiter(t *testing.T) {
	t.Parallel()
	rec := liveRecruiter(t, recruiter.Config{Inline: true})
	if err := rec.Register(recruiter.Func("steal-seven", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{Items: 7, More: true}, nil // More: no local rest between slices
	}), recruiter.JobConfig{Rate: 1, Budget: time.Second}); err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(rec, dashboard.WithTitle("live"), dashboard.WithTraceURL("http://jaeger/trace/%s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	for range 3 {
		rec.Enlist(context.Background()) // inline: the slice has ended when Enlist returns
	}

	doc := getJSON(t, d)
	if len(doc.Jobs) != 1 {
		t.Fatalf("jobs %+v", doc.Jobs)
	}
	j := doc.Jobs[0]
	if j.Name != "steal-seven" || j.Drawn != 3 || j.Ran != 3 || j.Slices != 3 || j.Items != 21 || j.LastRun == nil || j.BudgetMS != 1000 {
		t.Fatalf("job %+v, want 3 draws, 3 runs and 21 items", j)
	}
	if len(doc.Recent) != 3 {
		t.Fatalf("%d recent recruitments, want 3", len(doc.Recent))
	}
	for _, r := range doc.Recent {
		if r.Job != "steal-seven" || r.Outcome != recruiter.OutcomeRan || r.Items != 7 || !r.More || len(r.TraceID) != 32 {
			t.Errorf("recent %+v", r)
		}
	}

	page := get(t, d, http.MethodGet, "/", "Accept", browserAccept).Body.String()
	row := jobRows(page, "steal-seven")
	for _, cell := range []string{`>3<span class="aside drawn">3 drawn</span>`, `data-state="on_time"`, `"num ran">3<`, `"num items strong">21<`, `"num rate">100%<`} {
		if !strings.Contains(row, cell) {
			t.Errorf("the row lacks %s:\n%s", cell, row)
		}
	}
	if !strings.Contains(page, `<a href="http://jaeger/trace/`+doc.Recent[0].TraceID+`"`) {
		t.Errorf("the page does not link the trace %s", doc.Recent[0].TraceID)
	}
}
