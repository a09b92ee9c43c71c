package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// BenchmarkQueueUpkeepAtLoad measures what keeping a queue moving costs
// at a steady load, wired two ways on one process (a recruiter with 500
// fast exits a second, automatic pace): the drain with TidyStale and
// PromoteDue beside it, as the README once showed (drain and PromoteDue
// Every 1s, TidyStale Every 10s), and the drain alone, whose claims
// maintain the queue. The load, for 10 s: 1,000 items/s (every 10ms, 9
// enqueued in one call and 1 with a 1s delay), 5 % failing their first
// attempt (retried after the default backoff, 0.5-1s), and 1 % claimed
// by a worker that vanishes (100 items in one claim 3 s in, lease 2 s).
// Then the traffic goes on until every item is done, or 30 s.
//
// Round trips are the process's own, recruiter and jobs together (one
// client, as in production), and the vanishing worker's one claim; the
// producer's enqueues are not counted. stranded-items is what was not
// done 30 s after the production stopped; s-to-done how long after it
// every item was. One run is one op: -benchtime 1x.
func BenchmarkQueueUpkeepAtLoad(b *testing.B) {
	for _, wiring := range []string{"drain+tidy+promote", "drain-only"} {
		b.Run(wiring, func(b *testing.B) {
			for range b.N {
				runUpkeepLoad(b, wiring == "drain+tidy+promote")
			}
		})
	}
}

func runUpkeepLoad(b *testing.B, separateJobs bool) {
	const (
		every        = time.Second
		tidyEvery    = 10 * time.Second
		fastExits    = 500 // per second
		perTick      = 10  // items every 10ms: 1,000/s
		produceFor   = 10 * time.Second
		doneWithin   = 30 * time.Second
		vanishLease  = 2 * time.Second
		failEvery    = 20  // 5 %
		vanishAt     = 300 // ticks: 3 s in
		vanishItems  = 100 // 1 % of 10,000
		delayedEvery = 10  // 10 %
	)
	srv := redistest.Start(b)
	prefix := testPrefix(b)
	rdb, trips := srv.Client(b), &redistest.RoundTrips{}
	rdb.AddHook(trips)
	q := newQueue(b, rdb, "load", queue.Config{Prefix: prefix})
	producer := newQueue(b, srv.Client(b), "load", queue.Config{Prefix: prefix})
	vanishing := newQueue(b, rdb, "load", queue.Config{Prefix: prefix, Lease: vanishLease})

	var done, failed atomic.Int64
	handler := func(_ context.Context, it queue.Item) ([]byte, error) {
		seq, _ := strconv.Atoi(strings.TrimPrefix(string(it.Payload), "item-"))
		if seq%failEvery == 0 && it.Attempt == 1 {
			failed.Add(1)
			return nil, errors.New("fails once")
		}
		done.Add(1)
		return nil, nil
	}
	drain, err := jobs.Drain(q, handler, jobs.DrainConfig{})
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The pressure gate is off: it reads this process's scheduler, which
	// the producer and the fast exits share with the "web server".
	rec, err := recruiter.New(rdb, recruiter.Config{Prefix: prefix, Logger: quiet, Pressure: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			b.Errorf("Shutdown: %v", err)
		}
	}()
	register := func(job recruiter.Job, err error, every time.Duration) {
		if err != nil {
			b.Fatal(err)
		}
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			b.Fatal(err)
		}
	}
	register(drain, nil, every)
	if separateJobs {
		promote, err := jobs.PromoteDue(q, jobs.PromoteConfig{})
		register(promote, err, every)
		tidy, err := jobs.TidyStale(q, jobs.TidyConfig{})
		register(tidy, err, tidyEvery)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	ended, cancel := context.WithCancel(context.Background())
	cancel() // a request's context once it has ended: the slice starts at once
	wg.Go(func() { openLoop(ctx, fastExits, func() { rec.Enlist(ended) }) })

	b.ResetTimer()
	producing, stopProducing := context.WithTimeout(ctx, produceFor)
	defer stopProducing()
	var produced, ticks int
	openLoop(producing, 1000/perTick, func() {
		payloads := make([][]byte, 0, perTick-1)
		for range perTick - 1 {
			payloads = append(payloads, []byte("item-"+strconv.Itoa(produced)))
			produced++
		}
		if _, err := producer.EnqueueBatch(ctx, payloads); err != nil {
			b.Errorf("EnqueueBatch: %v", err)
		}
		if _, _, err := producer.EnqueueWith(ctx, []byte("item-"+strconv.Itoa(produced)), queue.EnqueueOptions{Delay: time.Second}); err != nil {
			b.Errorf("EnqueueWith: %v", err)
		}
		produced++
		if ticks++; ticks == vanishAt {
			if _, err := vanishing.Claim(ctx, vanishItems); err != nil {
				b.Errorf("the vanishing worker's Claim: %v", err)
			}
		}
	})
	stoppedAt := time.Now()
	for time.Since(stoppedAt) < doneWithin && done.Load() < int64(produced) {
		time.Sleep(10 * time.Millisecond)
	}
	toDone := time.Since(stoppedAt)
	total := trips.Load()
	b.StopTimer()
	stop()
	wg.Wait()

	stranded := int64(produced) - done.Load()
	d := mustDepth(b, q)
	js := rec.Stats().Jobs
	slices := map[string]uint64{}
	for _, j := range js {
		slices[strings.SplitN(j.Name, ".", 2)[0]] += j.Ran
	}
	b.ReportMetric(float64(total)/float64(produced), "roundtrips/item")
	b.ReportMetric(float64(produced), "items")
	b.ReportMetric(float64(failed.Load()), "retries")
	b.ReportMetric(float64(stranded), "stranded-items")
	b.ReportMetric(toDone.Seconds(), "s-to-done")
	b.ReportMetric(float64(slices["drain"]), "drain-slices")
	b.ReportMetric(float64(slices["tidy"]+slices["promote"]), "tidy+promote-slices")
	if stranded > 0 {
		b.Logf("%d of %d items not done %v after the production stopped: %+v", stranded, produced, doneWithin, d)
	}
}
