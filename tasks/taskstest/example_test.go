package taskstest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
	"github.com/worksteal/worksteal/tasks/taskstest"
)

// The application's code: a signup enqueues a welcome mail for a
// minute later, once per address; the mail's handler sends it.
type WelcomeArgs struct{ Email string }

var welcome = tasks.Define[WelcomeArgs, string]("welcome")

func signup(ctx context.Context, c *tasks.Client, email string) error {
	_, err := welcome.Enqueue(ctx, c, WelcomeArgs{Email: email}, tasks.Delay(time.Minute), tasks.Unique(email, time.Hour))
	return err
}

// The application's test: what signup enqueued, decoded, and the
// handler run to the end, synchronously, without sleeping.
func testSignup(t *testing.T) {
	ctx := context.Background()
	q, err := queue.New(taskstest.Redis(t), "mail", queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := signup(ctx, client, "ann@example.com"); err != nil {
		t.Fatal(err)
	}

	got := taskstest.Tasks(t, q)
	if len(got) != 1 || got[0].Type != "welcome" || got[0].Due.IsZero() {
		t.Fatalf("enqueued %+v; want one welcome, delayed", got)
	}
	if args := taskstest.Args[WelcomeArgs](t, got[0], nil); args.Email != "ann@example.com" {
		t.Fatalf("welcome to %q", args.Email)
	}

	// Run the handler: enqueued without the delay, the task is due now.
	var sent []string
	mux := tasks.NewMux()
	if err := welcome.Handle(mux, func(_ context.Context, a WelcomeArgs) (string, error) {
		sent = append(sent, a.Email)
		return "sent", nil
	}); err != nil {
		t.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := welcome.Enqueue(ctx, client, WelcomeArgs{Email: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	rep := taskstest.Run(t, q, job)
	if fmt.Sprint(sent) != "[bob@example.com]" || rep.Depth.Dead != 0 || rep.Depth.Delayed != 1 {
		t.Fatalf("sent %v, queue %+v; want bob's mail sent, ann's still delayed", sent, rep.Depth)
	}
}

// An application's test of its tasks: testSignup, run by go test in this
// package as TestSignupExample.
func Example() {}
