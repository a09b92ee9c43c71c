package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

type mailArgs struct{ To string }

var sendTask = tasks.Define[mailArgs, string]("send")

// fleet is what a fleet leaves in Redis: queues mail (tasks, three dead
// letters, one pending) and plain (empty), jobs tasks.mail and nightly,
// and the registry.
type fleet struct {
	rdb    redis.UniversalClient
	flags  []string
	prefix string
	mail   *queue.Queue
	dead   []string // ids of mail's dead letters, oldest first
	live   string   // id of mail's pending task
}

func newFleet(t *testing.T, rdb redis.UniversalClient, flags ...string) *fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := &fleet{rdb: rdb, prefix: redistest.Prefix(t), flags: flags}
	var err error
	if f.mail, err = queue.New(rdb, "mail", queue.Config{Prefix: f.prefix, MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.New(rdb, "plain", queue.Config{Prefix: f.prefix}); err != nil {
		t.Fatal(err)
	}
	mux := tasks.NewMux()
	if err := sendTask.Handle(mux, func(context.Context, mailArgs) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := mux.Job(f.mail, jobs.DrainConfig{}); err != nil {
		t.Fatal(err)
	}
	client, err := tasks.NewClient(f.mail)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"ann", "bob", "cy"} {
		id, err := sendTask.Enqueue(ctx, client, mailArgs{To: to})
		if err != nil {
			t.Fatal(err)
		}
		f.dead = append(f.dead, id)
	}
	items, err := f.mail.Claim(ctx, 3)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d, %v", len(items), err)
	}
	for _, it := range items {
		if err := f.mail.Nack(ctx, it, errors.New("550 mailbox unavailable")); err != nil {
			t.Fatal(err)
		}
	}
	if f.live, err = sendTask.Enqueue(ctx, client, mailArgs{To: "dee"}); err != nil {
		t.Fatal(err)
	}
	// What a recruiter's timer writes once a slice ran.
	if err := registry.Write(ctx, rdb, f.prefix, []registry.Job{
		{Name: "tasks.mail", BudgetMS: 50, EveryMS: 60000},
		{Name: "nightly", BudgetMS: 1000, Schedule: "0 3 * * *"},
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// localFleet is a fleet on a fresh redis-server, reached with --redis.
func localFleet(t *testing.T) (*fleet, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	f := newFleet(t, srv.Client(t), "--redis", srv.URL())
	return f, srv
}

// cli runs the command in-process, with the fleet's connection and
// prefix first (a test's args may override them).
func (f *fleet) cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	all := append(append(append([]string{}, f.flags...), "--prefix", f.prefix), args...)
	code = run(ctx, all, &out, &errOut)
	return out.String(), errOut.String(), code
}

// ok runs the command and fails the test unless it exits 0.
func (f *fleet) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := f.cli(t, args...)
	if code != exitOK {
		t.Fatalf("worksteal %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// okJSON runs the command with --json and decodes its output into v.
func (f *fleet) okJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := f.ok(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("worksteal %s --json: %v in %q", strings.Join(args, " "), err, out)
	}
}

// fails runs the command and checks its exit code and error text.
func (f *fleet) fails(t *testing.T, code int, says string, args ...string) {
	t.Helper()
	_, errOut, got := f.cli(t, args...)
	if got != code || !strings.Contains(errOut, says) {
		t.Errorf("worksteal %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(args, " "), got, errOut, code, says)
	}
}
