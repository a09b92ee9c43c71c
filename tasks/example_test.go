package tasks_test

import (
	"context"
	"fmt"
	"log"
	"strings"
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

// resize is the task type "resize", with its arguments and its result:
// the handler and the callers share it, so they agree on both at compile
// time.
var resize = tasks.Define[ResizeArgs, Thumb]("resize")

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
	err = resize.Handle(mux, func(ctx context.Context, a ResizeArgs) (Thumb, error) {
		return Thumb{Path: fmt.Sprintf("thumbs/%d/%s", a.Width, a.Image)}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := rec.Register(job, recruiter.JobConfig{Every: time.Second, Budget: 20 * time.Millisecond}); err != nil {
		log.Fatal(err)
	}

	// A client, in this process or another.
	c, err := tasks.NewClient(q)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	thumb, err := resize.Call(ctx, c, ResizeArgs{Image: "cat.png", Width: 128}) // a Thumb
	if err != nil {
		log.Fatal(err) // errors.Is(err, queue.ErrDead) when every attempt failed
	}
	fmt.Println(thumb.Path)
}

// A report, due in an hour, with three attempts, enqueued at most once
// per day and customer however many servers ask: a second Enqueue with
// the key, while the first task waits or runs, returns the first's id.
// The queue's job (see the Mux example) runs it when it is due.
func ExampleTask_Enqueue() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "reports", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}

	c, err := tasks.NewClient(q)
	if err != nil {
		log.Fatal(err)
	}
	day := time.Now().Format(time.DateOnly)
	id, err := report.Enqueue(context.Background(), c, ReportArgs{Customer: 42, Day: day},
		tasks.Delay(time.Hour), tasks.Attempts(3), tasks.Unique(fmt.Sprintf("42/%s", day), 24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("report task", id)
}

// Every customer's report of the day, 1,000 tasks to a script call: one
// round trip where Enqueue would make 1,000. Each has three attempts.
func ExampleTask_EnqueueMany() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "reports", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}

	c, err := tasks.NewClient(q)
	if err != nil {
		log.Fatal(err)
	}
	day := time.Now().Format(time.DateOnly)
	args := make([]ReportArgs, 1000)
	for i := range args {
		args[i] = ReportArgs{Customer: i + 1, Day: day}
	}
	ids, err := report.EnqueueMany(context.Background(), c, args, tasks.Attempts(3))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids), "report tasks")
}

// A type known only at run time, read from a request with its arguments
// as JSON: Raw enqueues the bytes as they are, the same task as the
// Task's method would, and the handler of the type decodes them when the
// task runs (ErrDecode if they do not fit).
func ExampleRaw() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	q, err := queue.New(rdb, "reports", queue.Config{})
	if err != nil {
		log.Fatal(err)
	}

	c, err := tasks.NewClient(q)
	if err != nil {
		log.Fatal(err)
	}
	typ := "report"                                      // from the request
	body := []byte(`{"Customer":42,"Day":"2026-11-29"}`) // its body
	id, err := tasks.Raw(typ).Enqueue(context.Background(), c, body)
	if err != nil {
		log.Fatal(err) // errors.Is(err, tasks.ErrInvalidArgument) for a type that is not a name
	}
	fmt.Println("report task", id)
}

// A family of types that this process does not know one by one: the
// "billing." tasks go on to a service that runs them, their arguments and
// results as bytes; a task of any other unknown type fails as it would
// without the handler.
func ExampleMux_HandleUnknown() {
	mux := tasks.NewMux()
	err := mux.HandleUnknown(func(ctx context.Context, typ string, args []byte) ([]byte, error) {
		if !strings.HasPrefix(typ, "billing.") {
			return nil, fmt.Errorf("%w: %s", tasks.ErrUnknownType, typ)
		}
		return billing(ctx, typ, args) // the result, in the codec's encoding (JSON)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// billing stands for a call to the service that runs the billing tasks.
func billing(context.Context, string, []byte) ([]byte, error) { return []byte("{}"), nil }

type ReportArgs struct {
	Customer int
	Day      string
}

// report is the task type "report": a task whose result is not read
// declares it struct{}.
var report = tasks.Define[ReportArgs, struct{}]("report")
