package jobs_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// A queue kept moving by the web servers themselves: drained in slices of
// 20ms, its crashed workers' leases tidied and its retries promoted at
// most once a second each across the fleet.
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
	drain, err := jobs.Drain(q, resize, jobs.DrainConfig{Batch: 50})
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
	for _, r := range []struct {
		job recruiter.Job
		cfg recruiter.JobConfig
	}{
		{drain, recruiter.JobConfig{Rate: 0.05, Budget: 20 * time.Millisecond}},
		{tidy, recruiter.JobConfig{Rate: 0.01, Every: time.Second}},
		{promote, recruiter.JobConfig{Rate: 0.01, Every: time.Second}},
	} {
		if err := rec.Register(r.job, r.cfg); err != nil {
			log.Fatal(err)
		}
	}
}

// A hash of sessions whose fields expire one by one, on any Redis.
func ExampleEvictExpired() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	sessions, err := jobs.NewExpiringHash(rdb, "sessions")
	if err != nil {
		log.Fatal(err)
	}
	if err := sessions.Set(ctx, "s3cr3t", []byte(`{"user":42}`), 30*time.Minute); err != nil {
		log.Fatal(err)
	}
	if _, err := sessions.Get(ctx, "s3cr3t"); err != nil { // jobs.ErrNotFound once expired
		log.Fatal(err)
	}

	evict, err := jobs.EvictExpired(rdb, "sessions", jobs.EvictConfig{})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := recruiter.New(rdb, recruiter.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Shutdown(context.Background())
	if err := rec.Register(evict, recruiter.JobConfig{Rate: 0.01, Every: 10 * time.Second}); err != nil {
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
