package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TestQueueDepthCost measures what the depth gauges cost a fleet: 10
// processes, no traffic (their pace timers run the job), a QueueDepth job
// with Every 1s and MaxAge 2s on a queue of 100,000 pending items. Each
// process is scraped (its meter collected) every 100ms. It reports the
// fleet's Redis round trips per second (lock visits and depth reads)
// against the scrapes' (none), and how many processes report a reading
// at once. BENCHMARKS.md quotes its log (go test -count=1 -run
// TestQueueDepthCost -v ./jobs/).
func TestQueueDepthCost(t *testing.T) {
	t.Parallel()
	const (
		procs  = 10
		every  = time.Second
		window = 10 * time.Second
		items  = 100_000
	)
	srv := redistest.Start(t)
	prefix := testPrefix(t)
	ctx := testContext(t)
	q := newQueue(t, srv.Client(t), "big", queue.Config{Prefix: prefix})
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = []byte("x")
	}
	for range items / len(batch) {
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}

	type process struct {
		reader *sdkmetric.ManualReader
		trips  *redistest.RoundTrips
	}
	fleet := make([]process, procs)
	for i := range fleet {
		rdb := srv.Client(t)
		p := process{reader: sdkmetric.NewManualReader(), trips: &redistest.RoundTrips{}}
		rdb.AddHook(p.trips)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		pq := newQueue(t, rdb, "big", queue.Config{Prefix: prefix})
		job, err := jobs.QueueDepth(pq, jobs.DepthConfig{MaxAge: 2 * every, MeterProvider: mp})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := recruiter.New(rdb, recruiter.Config{Prefix: prefix, Pressure: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rec.Shutdown(context.Background()) })
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			t.Fatal(err)
		}
		fleet[i] = p
	}
	time.Sleep(3 * time.Second) // start-up: the pace's first visits, the eviction policy's reading

	var before int64
	for _, p := range fleet {
		before += p.trips.Load()
	}
	var (
		reporting []int // processes reporting a reading, at each sample
		scrapes   int
		during    int64 // round trips made inside the collections
	)
	end := time.Now().Add(window)
	for time.Now().Before(end) {
		n := 0
		for _, p := range fleet {
			was := p.trips.Load()
			depth, _ := depthGauges(t, p.reader)
			during += p.trips.Load() - was // may count a slice's call that overlapped: an upper bound
			scrapes++
			if depth[[2]string{"big", "pending"}] == items {
				n++
			}
		}
		reporting = append(reporting, n)
		time.Sleep(100 * time.Millisecond)
	}
	var after int64
	for _, p := range fleet {
		after += p.trips.Load()
	}
	perSecond := float64(after-before) / window.Seconds()
	slices.Sort(reporting)
	none := 0
	for _, n := range reporting {
		if n == 0 {
			none++
		}
	}
	t.Logf("%d processes, Every %v, MaxAge %v, %d items pending: fleet round trips %.1f/s (lock visits and depth reads); %d scrapes made %d round trips at most (slices overlapping them)",
		procs, every, 2*every, items, perSecond, scrapes, during)
	t.Logf("processes reporting a reading at once, over %d samples: min %d, median %d, max %d; samples with none: %d",
		len(reporting), reporting[0], reporting[len(reporting)/2], reporting[len(reporting)-1], none)
	if perSecond > 10 {
		t.Errorf("%.1f round trips/s for a 1s depth job on %d processes: want a few (visits and one read per Every)", perSecond, procs)
	}
	if reporting[len(reporting)/2] < 1 || reporting[len(reporting)-1] > procs {
		t.Errorf("reporting %v: want one or a few processes at once", reporting)
	}
}
