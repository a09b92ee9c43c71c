package inspect_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/inspect"
)

// An incident: read the dead letters of a queue, retry those of one task
// type, and pause the job that works the queue while its upstream is down.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	in, err := inspect.New(rdb, inspect.Config{})
	if err != nil {
		log.Fatal(err)
	}
	page, err := in.Items(ctx, "mail", inspect.StateDead, 0, 100)
	if err != nil {
		log.Fatal(err)
	}
	var retry []string
	for _, it := range page.Items {
		fmt.Println(it.ID, it.At, it.Attempts, it.Cause)
		if it.Task != nil && it.Task.Type == "welcome" {
			retry = append(retry, it.ID)
		}
	}
	if len(retry) > 0 {
		if _, err := in.RetryDead(ctx, "mail", retry...); err != nil {
			log.Fatal(err)
		}
	}
	if err := in.Pause(ctx, "tasks.mail", 15*time.Minute); err != nil {
		log.Fatal(err)
	}
}
