package exphash_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
)

// A hash of sessions whose fields expire one by one, on any Redis.
func ExampleHash() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	sessions, err := exphash.New(rdb, "sessions")
	if err != nil {
		log.Fatal(err)
	}
	if err := sessions.Set(ctx, "s3cr3t", []byte(`{"user":42}`), 30*time.Minute); err != nil {
		log.Fatal(err)
	}
	v, err := sessions.Get(ctx, "s3cr3t")
	switch {
	case errors.Is(err, exphash.ErrNotFound): // expired, or never set
		log.Println("signed out")
	case err != nil:
		log.Fatal(err)
	default:
		log.Printf("session %s", v)
	}
}

// Evicting without a recruiter: a loop of one's own removes the expired
// fields, a bounded batch per call. jobs.EvictExpired does this in slices
// borrowed from web servers instead.
func ExampleHash_Evict() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	sessions, err := exphash.New(rdb, "sessions")
	if err != nil {
		log.Fatal(err)
	}
	for {
		n, err := sessions.Evict(ctx, 500)
		if err != nil {
			log.Fatal(err)
		}
		if n < 500 { // nothing more has expired
			break
		}
	}
}
