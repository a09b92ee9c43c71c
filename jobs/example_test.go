package jobs_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// A queue kept moving by the web servers themselves: drained in slices of
// 20ms about once a second across the fleet, sooner while a backlog
// lasts. The drain's claims also bring back its retries and delayed items
// when due and its crashed workers' expired leases: no other job needed.
func ExampleDrain() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	q, err := queue.New(rdb, "thumbnails", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}

	resize := func(ctx context.Context, it queue.Item) ([]byte, error) {
		// it.Payload names an image; the result is what Queue.Wait returns.
		return []byte("thumbs/" + string(it.Payload)), nil
	}
	drain, err := jobs.Drain(q, resize, jobs.DrainConfig{Batching: jobs.Batching{Batch: 50}})
	if err != nil {
		log.Fatal(err)
	}
	if err := rec.Register(drain, recruiter.JobConfig{Every: time.Second, Budget: 20 * time.Millisecond}); err != nil {
		log.Fatal(err)
	}
}

// A queue that workers of your own claim from (queue.Queue.Claim, Ack,
// Nack), which may all be down for a while: the web servers hand its
// crashed workers' expired leases back and promote its due retries in
// the meantime, so that they wait as pending and Depth says so. (A queue
// worked by a Drain needs neither: its claims do both.)
func ExampleTidyStale() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	q, err := queue.New(rdb, "invoices", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	tidy, err := jobs.TidyStale(q, jobs.TidyConfig{})
	if err != nil {
		log.Fatal(err)
	}
	promote, err := jobs.PromoteDue(q, jobs.PromoteConfig{})
	if err != nil {
		log.Fatal(err)
	}
	for _, job := range []recruiter.Job{tidy, promote} {
		if err := rec.Register(job, recruiter.JobConfig{Every: 10 * time.Second}); err != nil {
			log.Fatal(err)
		}
	}
}

// A hash of sessions whose fields expire one by one, on any Redis, and
// the job that evicts the expired ones at most once every ten seconds
// across the fleet.
func ExampleEvictExpired() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	sessions, err := exphash.New(rdb, "sessions")
	if err != nil {
		log.Fatal(err)
	}
	// The web handlers call sessions.Set and sessions.Get.
	evict, err := jobs.EvictExpired(sessions, jobs.EvictConfig{})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	if err := rec.Register(evict, recruiter.JobConfig{Every: 10 * time.Second}); err != nil {
		log.Fatal(err)
	}
}

// A sorted set of who is online, scored by when each presence expires in
// Unix seconds, as ZADD presence <time.Now().Add(ttl).Unix()> <user> writes.
func ExampleEvictExpiredMembers() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	evict, err := jobs.EvictExpiredMembers(rdb, "presence", jobs.EvictConfig{ScoreUnit: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	log.Println(evict.Name()) // evict-members.presence
}

// A batched job over a step of one's own: here a backlog in memory, so
// that the slices' reports show; in practice a script or a query that
// handles up to max entries and says how many it did. Each slice makes at
// most two batches of 100, and reports More while its last batch was full.
func ExampleBatchJob() {
	backlog := 250
	step := func(ctx context.Context, max int) (int, error) {
		n := min(max, backlog)
		backlog -= n
		return n, nil
	}
	job, err := jobs.BatchJob("trim-backlog", jobs.Batching{Batch: 100, MaxBatches: 2}, step)
	if err != nil {
		log.Fatal(err)
	}
	for more := true; more; {
		rep, err := job.Run(context.Background()) // a recruiter gives it a deadline
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %+v\n", job.Name(), rep)
		more = rep.More
	}
	// Output:
	// trim-backlog: {Items:200 More:true}
	// trim-backlog: {Items:50 More:false}
}

// A queue's depth by state and its oldest pending item as Prometheus
// gauges (through an otel MeterProvider), read by one process at a time
// every 15s: one Redis call per 15s for the fleet, none per scrape.
// Panels take max by queue and state of what the processes report.
func ExampleQueueDepth() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	q, err := queue.New(rdb, "thumbnails", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	depth, err := jobs.QueueDepth(q, jobs.DepthConfig{MaxAge: 45 * time.Second}) // the otel global MeterProvider
	if err != nil {
		log.Fatal(err)
	}
	if err := rec.Register(depth, recruiter.JobConfig{Every: 15 * time.Second}); err != nil {
		log.Fatal(err)
	}
}
