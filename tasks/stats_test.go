package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
	"github.com/worksteal/worksteal/telemetry"
)

// The Mux counts each attempt by type and outcome, in Stats and in the
// metrics: a success is done, a failure below the task's limit (the
// queue's MaxAttempts, 3, or its own Attempts) retried, one at it dead; a
// panic fails its attempt like an error; a task of an unknown type counts
// under no type.
func TestStatsByType(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b := setup(t, nil, fastRetries, tasks.WithMeterProvider(mp))
	mustHandle(t, b.mux, "add", add)
	var mu sync.Mutex
	calls := map[string]int{}
	mustHandle(t, b.mux, "flaky", func(_ context.Context, a addArgs) (sum, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[a.Label]++
		switch {
		case a.Label == "never":
			return sum{}, errors.New("never works")
		case a.Label == "panics" && calls[a.Label] == 1:
			panic("first attempt panics")
		case calls[a.Label] == 1:
			return sum{}, errors.New("first attempt fails")
		}
		return sum{Sum: a.A + a.B}, nil
	})
	if got := b.mux.Stats(); len(got) != 2 || got[0] != (tasks.TypeStats{Type: "add"}) || got[1] != (tasks.TypeStats{Type: "flaky"}) {
		t.Fatalf("Stats before any task = %+v, want add and flaky at zero", got)
	}
	ids := []string{
		mustEnqueue(t, b.client, "add", addArgs{A: 1, B: 2}),
		mustEnqueue(t, b.client, "add", addArgs{A: 3, B: 4}),
		mustEnqueue(t, b.client, "flaky", addArgs{Label: "once"}),
		mustEnqueue(t, b.client, "flaky", addArgs{Label: "panics"}),
		mustEnqueue(t, b.client, "flaky", addArgs{Label: "never"}),
		mustEnqueue(t, b.client, "nobody", addArgs{}),
		mustEnqueueWith(t, b.client, "flaky", addArgs{Label: "never"}, tasks.Attempts(1)),
		mustEnqueueWith(t, b.client, "flaky", addArgs{Label: "never"}, tasks.Attempts(4)),
	}
	// The Mux recovers the panic: its slice returns no error for it.
	testrig.Eventually(t, 20*time.Second, "every task settled", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := b.job.Run(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run: %v", err)
		}
		if _, err := qstore.Of(b.q).Promote(ctx, queue.BatchMax); err != nil {
			t.Fatalf("Promote: %v", err)
		}
		d, err := b.q.Depth(ctx)
		return err == nil && d.Pending+d.Leased+d.Delayed == 0 && d.Dead == 4
	})
	wantDead(t, b.q, ids[4], "never works")
	// add: 2 done. flaky: once and panics fail then succeed (2 retried, 2
	// done); never fails 3 times (2 retried, 1 dead), once with 1 attempt
	// (1 dead), 4 times with 4 (3 retried, 1 dead). nobody: not counted.
	want := []tasks.TypeStats{
		{Type: "add", Done: 2},
		{Type: "flaky", Done: 2, Retried: 7, Dead: 3},
	}
	got := b.mux.Stats()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Depth = %+v, want %+v", got, want)
	}
	if f := got[1].Failed(); f != 10 {
		t.Errorf("flaky Failed() = %d, want 10", f)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	attempts := func(typ, outcome string, n int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(
			telemetry.AttrTaskType.String(typ), telemetry.AttrTaskOutcome.String(outcome)), Value: n}
	}
	running := func(typ string) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(telemetry.AttrTaskType.String(typ)), Value: 0}
	}
	wantMetrics := []metricdata.Metrics{
		{
			Name: telemetry.MetricTaskAttempts, Description: "Task attempts run by this process, by task type and outcome.", Unit: "{attempt}",
			Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{
				attempts("add", telemetry.TaskDone, 2), attempts("flaky", telemetry.TaskDone, 2),
				attempts("flaky", telemetry.TaskRetried, 7), attempts("flaky", telemetry.TaskDead, 3),
			}},
		},
		{
			Name: telemetry.MetricTaskRunning, Description: "Task attempts in their handler in this process now, by task type.", Unit: "{attempt}",
			Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, DataPoints: []metricdata.DataPoint[int64]{
				running("add"), running("flaky"),
			}},
		},
	}
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.Name != telemetry.ScopeName {
		t.Fatalf("scopes %+v, want one, %s", rm.ScopeMetrics, telemetry.ScopeName)
	}
	ms := rm.ScopeMetrics[0].Metrics
	if len(ms) != len(wantMetrics) {
		t.Fatalf("metrics %+v, want %d", ms, len(wantMetrics))
	}
	for i := range wantMetrics {
		metricdatatest.AssertEqual(t, wantMetrics[i], ms[i], metricdatatest.IgnoreTimestamp())
	}
}

// Stats of a Mux without handlers is empty, and a nil Mux's nil.
func TestStatsEmpty(t *testing.T) {
	t.Parallel()
	if got := tasks.NewMux().Stats(); got == nil || len(got) != 0 {
		t.Errorf("Stats of a new Mux = %#v, want empty, not nil", got)
	}
	var m *tasks.Mux
	if got := m.Stats(); got != nil {
		t.Errorf("Stats of a nil Mux = %#v, want nil", got)
	}
}
