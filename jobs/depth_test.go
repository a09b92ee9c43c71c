package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/telemetry"
)

// depthClock is a clock the test moves by hand.
type depthClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *depthClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *depthClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// depthGauges collects reader once: the depth by queue and state, and
// the oldest pending item's wait by queue.
func depthGauges(t *testing.T, reader sdkmetric.Reader) (depth map[[2]string]int64, oldest map[string]float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	depth, oldest = map[[2]string]int64{}, map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != telemetry.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, telemetry.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch m.Name {
			case telemetry.MetricQueueDepth:
				for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					q, _ := dp.Attributes.Value(telemetry.AttrQueue)
					s, _ := dp.Attributes.Value(telemetry.AttrQueueState)
					depth[[2]string{q.AsString(), s.AsString()}] = dp.Value
				}
			case telemetry.MetricQueueOldestPending:
				for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
					q, _ := dp.Attributes.Value(telemetry.AttrQueue)
					oldest[q.AsString()] = dp.Value
				}
			}
		}
	}
	return depth, oldest
}

// TestQueueDepthGauges: a slice reads the queue's depth once; the gauges
// report that reading, by state, without a Redis call of their own, for
// MaxAge after it, then nothing until the next slice.
func TestQueueDepthGauges(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	b := setup(t, queue.Config{MaxAttempts: 1})
	for range 5 {
		if _, err := b.q.Enqueue(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := b.q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	claimed, err := b.q.Claim(ctx, 2)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("Claim: %d items, %v", len(claimed), err)
	}
	if err := b.q.Nack(ctx, claimed[0], errors.New("no")); err != nil { // its last attempt: dead
		t.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	clock := &depthClock{now: time.Unix(1_700_000_000, 0)}
	job, err := jobs.QueueDepth(b.q, jobs.DepthConfig{MaxAge: 30 * time.Second, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	jobs.SetDepthClock(job, clock.Now)
	if job.Name() != "depth.jobs" {
		t.Errorf("name %q, want depth.jobs", job.Name())
	}
	if depth, oldest := depthGauges(t, reader); len(depth)+len(oldest) != 0 {
		t.Errorf("before any slice: %v %v, want nothing", depth, oldest)
	}

	if _, err := b.q.Depth(ctx); err != nil { // loads the script: the count below is of EVALSHA alone
		t.Fatal(err)
	}
	trips := &redistest.RoundTrips{}
	b.rdb.AddHook(trips)
	if rep := mustSlice(t, job, time.Second); rep.Items != 0 || rep.More {
		t.Errorf("report %+v, want no items, no more", rep)
	}
	if n := trips.Load(); n != 1 {
		t.Errorf("a slice made %d round trips, want 1 (Depth's script)", n)
	}
	want := map[[2]string]int64{
		{"jobs", telemetry.QueuePending}: 3, {"jobs", telemetry.QueueLeased}: 1, {"jobs", telemetry.QueueExpired}: 0,
		{"jobs", telemetry.QueueDelayed}: 1, {"jobs", telemetry.QueueDue}: 0, {"jobs", telemetry.QueueDead}: 1,
	}
	for range 100 {
		depth, oldest := depthGauges(t, reader)
		if len(depth) != len(want) {
			t.Fatalf("depth %v, want %v", depth, want)
		}
		for k, v := range want {
			if depth[k] != v {
				t.Fatalf("depth %v, want %v", depth, want)
			}
		}
		if w := oldest["jobs"]; w < 0 || w > 30 || len(oldest) != 1 {
			t.Fatalf("oldest pending %v, want the wait of jobs' head, under 30s", oldest)
		}
	}
	if n := trips.Load(); n != 1 {
		t.Errorf("100 collections made %d round trips, want none", n-1)
	}

	clock.Advance(30 * time.Second)
	if depth, _ := depthGauges(t, reader); len(depth) != len(want) {
		t.Errorf("at MaxAge: %v, want the reading still", depth)
	}
	clock.Advance(time.Millisecond)
	if depth, oldest := depthGauges(t, reader); len(depth)+len(oldest) != 0 {
		t.Errorf("past MaxAge: %v %v, want nothing", depth, oldest)
	}
	if _, err := b.q.Enqueue(ctx, []byte("y")); err != nil {
		t.Fatal(err)
	}
	mustSlice(t, job, time.Second)
	if depth, _ := depthGauges(t, reader); depth[[2]string{"jobs", telemetry.QueuePending}] != 4 {
		t.Errorf("after a new slice: %v, want 4 pending", depth)
	}
}

// TestQueueDepthFailure: a read that fails is the slice's error, naming
// the job, and leaves the last reading as it was.
func TestQueueDepthFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	job, err := jobs.QueueDepth(b.q, jobs.DepthConfig{MeterProvider: mp, Name: "depth-of-jobs", RedisTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mustSlice(t, job, time.Second)
	b.srv.Kill()
	if _, _, err := runSlice(t, job, time.Second); err == nil || !strings.Contains(err.Error(), "jobs: depth-of-jobs") {
		t.Errorf("slice on a dead Redis: %v, want an error naming the job", err)
	}
	if depth, _ := depthGauges(t, reader); len(depth) != 6 {
		t.Errorf("after a failed read: %v, want the last reading's 6 states", depth)
	}
}

// TestQueueDepthConfig: invalid settings are errors that name them.
func TestQueueDepthConfig(t *testing.T) {
	t.Parallel()
	q := newQueue(t, redisClient(t), "jobs", queue.Config{})
	for _, tc := range []struct {
		name string
		q    *queue.Queue
		cfg  jobs.DepthConfig
		want error
	}{
		{"nil queue", nil, jobs.DepthConfig{}, jobs.ErrInvalidArgument},
		{"negative MaxAge", q, jobs.DepthConfig{MaxAge: -time.Second}, jobs.ErrInvalidConfig},
		{"MaxAge over a day", q, jobs.DepthConfig{MaxAge: 25 * time.Hour}, jobs.ErrInvalidConfig},
		{"RedisTimeout over 10s", q, jobs.DepthConfig{RedisTimeout: time.Minute}, jobs.ErrInvalidConfig},
		{"bad name", q, jobs.DepthConfig{Name: "a b"}, jobs.ErrInvalidConfig},
	} {
		if _, err := jobs.QueueDepth(tc.q, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
