package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/queue"
)

// A client submits work and waits for its answer; a worker claims a batch,
// settles it in one round trip, and hands back what it had no time for.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "thumbnails", queue.Config{Lease: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// The client.
	id, err := q.Enqueue(ctx, []byte(`{"image":"cat.jpg","width":128}`))
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		thumb, err := q.Wait(ctx, id)
		fmt.Println(string(thumb), err)
	}()

	// A worker, with a budget of 50ms.
	work, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	items, err := q.Claim(work, 100)
	if err != nil {
		log.Fatal(err)
	}
	var done []queue.Settlement
	for i, it := range items {
		if work.Err() != nil { // out of time: hand the rest back, uncounted
			_, _ = q.Release(ctx, items[i:]...)
			break
		}
		thumb, err := render(it.Payload)
		done = append(done, queue.Settlement{Item: it, Result: thumb, Err: err})
	}
	if _, err := q.Settle(ctx, done...); err != nil {
		log.Print(err)
	}
}

func render([]byte) ([]byte, error) { return []byte("thumbnail"), nil }

// What a queue holds, read in one step: its maintenance is behind if
// items are due or expired (a claim, or package jobs' PromoteDue and
// TidyStale for a queue nobody claims from, brings them back).
func ExampleQueue_Depth() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "thumbnails", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	s, err := q.Depth(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d pending, next waited %v, %d due, %d expired, %d dead\n", s.Pending, s.OldestPending, s.Due, s.Expired, s.Dead)
}

// A worker that loses its lease learns it from Ack, and drops its result.
func ExampleQueue_Ack() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "thumbnails", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	items, err := q.Claim(ctx, 1)
	if err != nil || len(items) == 0 {
		return
	}
	err = q.Ack(ctx, items[0], []byte("thumbnail"))
	if errors.Is(err, queue.ErrLeaseLost) {
		log.Printf("item %s was handed to another worker meanwhile", items[0].ID)
	}
}
