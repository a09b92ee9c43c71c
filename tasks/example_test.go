package tasks_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

type ResizeArgs struct {
	Image string
	Width int
}

type Thumb struct {
	Path string
}

// Thumbnails made by the web servers' slices: a Mux holds the typed
// handler, its job is registered with the recruiter, and a client calls
// the task and waits for the typed result.
func ExampleMux() {
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

	mux := tasks.NewMux()
	err = tasks.Handle(mux, "resize", func(ctx context.Context, a ResizeArgs) (Thumb, error) {
		return Thumb{Path: fmt.Sprintf("thumbs/%d/%s", a.Width, a.Image)}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := rec.Register(job, recruiter.JobConfig{Rate: 0.05, Budget: 20 * time.Millisecond}); err != nil {
		log.Fatal(err)
	}

	// A client, in this process or another.
	c, err := tasks.NewClient(q)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	thumb, err := tasks.Call[ResizeArgs, Thumb](ctx, c, "resize", ResizeArgs{Image: "cat.png", Width: 128})
	if err != nil {
		log.Fatal(err) // errors.Is(err, queue.ErrDead) when every attempt failed
	}
	fmt.Println(thumb.Path)
}
