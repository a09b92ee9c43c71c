package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/worksteal/worksteal/inspect"
	"github.com/worksteal/worksteal/internal/registry"
	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

type mailArgs struct{ To string }

// The tests' task types.
var (
	sendTask   = tasks.Define[mailArgs, string]("send")
	digestTask = tasks.Define[mailArgs, string]("digest")
	renderTask = tasks.Define[mailArgs, string]("render")
	logTask    = tasks.Define[mailArgs, string]("log")
	partTask   = tasks.Define[mailArgs, string]("part")
	joinTask   = tasks.Define[mailArgs, string]("join")
)

// queue.New, a Mux's Job and Register write nothing; the recruiter's
// timer writes the registry once a slice reached Redis, and the Inspector
// lists the queue, the jobs with their pace and the task types from it.
func TestRegistryWrittenByRecruiter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q, err := queue.New(b.rdb, "mail", queue.Config{Prefix: b.prefix, MaxAttempts: 7})
	if err != nil {
		t.Fatal(err)
	}
	mux := tasks.NewMux()
	if err := sendTask.Handle(mux, func(context.Context, mailArgs) (string, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := recruiter.Config{Prefix: b.prefix, Inline: true}
	seams.SetRoll(&cfg, func() float64 { return 0 }, nil)
	rec, err := recruiter.New(b.rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Shutdown(context.Background()) })
	if err := rec.Register(job, recruiter.JobConfig{Rate: 0.5, Every: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Register(recruiter.Func("nightly", func(context.Context) (recruiter.Report, error) { return recruiter.Report{}, nil }),
		recruiter.JobConfig{Schedule: "0 3 * * *"}); err != nil {
		t.Fatal(err)
	}
	// A handler added after the job was made is listed too.
	if err := digestTask.Handle(mux, func(context.Context, mailArgs) (string, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	if n, err := b.rdb.Exists(ctx, registryKeys(b.prefix)...).Result(); n != 0 || err != nil {
		t.Fatalf("before any slice, %d registry keys exist (%v); want none", n, err)
	}
	rec.Enlist(ctx) // roll 0: the mail job's slice, inline
	testrig.Eventually(t, 20*time.Second, "the registry written", func() bool {
		js, err := b.in.Jobs(ctx)
		return err == nil && len(js) == 2
	})
	qs, err := b.in.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != "mail" || qs[0].MaxAttempts != 7 || qs[0].Lease != 30*time.Second || qs[0].Registered.IsZero() {
		t.Fatalf("Queues = %+v, %v; want mail with MaxAttempts 7, Lease 30s", qs, err)
	}
	js, err := b.in.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if js[0].Name != "nightly" || js[0].Pace() != "schedule 0 3 * * *" || js[0].NextTick.IsZero() ||
		js[0].NextTick.Hour() != 3 || !js[0].NextTick.After(js[0].Lock.Now) {
		t.Errorf("jobs[0] = %+v; want nightly, scheduled at 3:00, next tick after now", js[0])
	}
	if js[1].Name != "tasks.mail" || js[1].Pace() != "rate 0.5, every 1m0s" || js[1].Budget != 50*time.Millisecond ||
		js[1].Lock.RestUntil.IsZero() || js[1].Lock.Running || js[1].Lock.Paused {
		t.Errorf("jobs[1] = %+v; want tasks.mail at rate 0.5 every 1m, resting after its slice", js[1])
	}
	types, err := b.in.TaskTypes(ctx)
	want := []string{"mail/digest/json", "mail/send/json"}
	var got []string
	for _, ty := range types {
		got = append(got, ty.Queue+"/"+ty.Type+"/"+ty.Codec)
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("TaskTypes = %v, %v; want %v", got, err, want)
	}
}

func registryKeys(prefix string) []string {
	q, j, ty := registry.Keys(prefix)
	return []string{q, j, ty}
}

// Every state lists its items oldest first, by pages, with their
// details; Item finds one in any state, done included.
func TestItemsByState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "work", queue.Config{MaxAttempts: 1})
	ids := make([]string, 6)
	for i := range ids {
		var err error
		if ids[i], err = q.Enqueue(ctx, fmt.Appendf(nil, "payload-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	items, err := q.Claim(ctx, 3) // ids 0-2: leased
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d, %v", len(items), err)
	}
	if err := q.Nack(ctx, items[0], errors.New("smtp refused")); err != nil { // the last attempt: dead
		t.Fatal(err)
	}
	if err := q.Ack(ctx, items[1], []byte("sent")); err != nil {
		t.Fatal(err)
	}
	delayed, _, err := q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: time.Hour, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}

	page := func(state inspect.State, offset, count int) inspect.Page {
		t.Helper()
		p, err := b.in.Items(ctx, "work", state, offset, count)
		if err != nil {
			t.Fatalf("Items(%v, %d, %d): %v", state, offset, count, err)
		}
		return p
	}
	idsOf := func(p inspect.Page) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, it.ID)
		}
		return out
	}
	if p := page(inspect.StatePending, 0, 2); p.Total != 3 || !slices.Equal(idsOf(p), ids[3:5]) || string(p.Items[0].Payload) != "payload-3" || p.Items[0].At.IsZero() {
		t.Errorf("pending page 1 = %+v; want %v of 3", p, ids[3:5])
	}
	if p := page(inspect.StatePending, 2, 2); p.Total != 3 || !slices.Equal(idsOf(p), ids[5:6]) {
		t.Errorf("pending page 2 = %v; want %v", idsOf(p), ids[5:6])
	}
	if p := page(inspect.StateLeased, 0, 10); p.Total != 1 || !slices.Equal(idsOf(p), ids[2:3]) || p.Items[0].Attempts != 1 || !p.Items[0].At.After(time.Now()) {
		t.Errorf("leased = %+v; want %s, attempt 1, a deadline ahead", p, ids[2])
	}
	if p := page(inspect.StateDelayed, 0, 10); p.Total != 1 || idsOf(p)[0] != delayed || p.Items[0].MaxAttempts != 4 ||
		p.Items[0].At.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("delayed = %+v; want %s, due in an hour, 4 attempts of its own", p, delayed)
	}
	if p := page(inspect.StateDead, 0, 10); p.Total != 1 || idsOf(p)[0] != ids[0] || p.Items[0].Cause != "smtp refused" || p.Items[0].Attempts != 1 ||
		p.Items[0].Task != nil {
		t.Errorf("dead = %+v; want %s with its cause", p, ids[0])
	}

	for id, want := range map[string]inspect.State{ids[0]: inspect.StateDead, ids[1]: inspect.StateDone, ids[2]: inspect.StateLeased,
		ids[3]: inspect.StatePending, delayed: inspect.StateDelayed} {
		it, err := b.in.Item(ctx, "work", id)
		if err != nil || it.State != want || it.Queue != "work" {
			t.Errorf("Item(%s) = %+v, %v; want %v", id, it, err, want)
		}
	}
	if it, err := b.in.FindItem(ctx, ids[1]); err != nil || it.State != inspect.StateDone || string(it.Payload) != "sent" {
		t.Errorf("FindItem(done) = %+v, %v; want its result", it, err)
	}
	if _, err := b.in.Item(ctx, "work", "nosuch"); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("Item(nosuch) = %v; want ErrNotFound", err)
	}
	if _, err := b.in.Items(ctx, "work", inspect.StateDone, 0, 10); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("Items(done) = %v; want ErrInvalidArgument", err)
	}
	if _, err := b.in.Items(ctx, "work", inspect.StateDead, 0, 1001); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("Items(count 1001) = %v; want ErrInvalidArgument", err)
	}
	if _, err := b.in.Items(ctx, "nosuch", inspect.StateDead, 0, 10); !errors.Is(err, inspect.ErrUnknownQueue) {
		t.Errorf("Items(unknown queue) = %v; want ErrUnknownQueue", err)
	}
}

// A task's envelope is read: its type, its arguments, a chain's step.
func TestItemsReadTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "tasks", queue.Config{})
	client, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	id, err := sendTask.Enqueue(ctx, client, mailArgs{To: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{renderTask.Step(mailArgs{To: "bob"}), sendTask.Step(mailArgs{To: "bob"})})
	if err != nil {
		t.Fatal(err)
	}
	it, err := b.in.Item(ctx, "tasks", id)
	if err != nil || it.Task == nil || it.Task.Type != "send" || it.Task.Codec != "json" || string(it.Task.Args) != `{"To":"ann@example.com"}` || it.Task.ChainSteps != 0 {
		t.Fatalf("Item(task) = %+v (task %+v), %v", it, it.Task, err)
	}
	it, err = b.in.Item(ctx, "tasks", chain)
	if err != nil || it.Task == nil || it.Task.Type != "render" || it.Task.ChainStep != 1 || it.Task.ChainSteps != 2 {
		t.Fatalf("Item(chain) = %+v (task %+v), %v; want render, step 1 of 2", it, it.Task, err)
	}
	// A preview too short to hold the envelope gives no task.
	short, err := inspect.New(b.rdb, inspect.Config{Prefix: b.prefix, Preview: 4})
	if err != nil {
		t.Fatal(err)
	}
	if it, err := short.Item(ctx, "tasks", id); err != nil || it.Task != nil || len(it.Payload) != 4 || it.Size <= 4 {
		t.Fatalf("Item with a 4-byte preview = %+v, %v; want 4 bytes of %d, no task", it, err, it.Size)
	}
}

// Dead letters are retried and purged by id, and all at once.
func TestDeadByID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "work", queue.Config{MaxAttempts: 1})
	ids := make([]string, 6)
	for i := range ids {
		var err error
		if ids[i], err = q.Enqueue(ctx, fmt.Appendf(nil, "p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	items, err := q.Claim(ctx, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := q.Nack(ctx, it, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.in.RetryDead(ctx, "work", ids[0], ids[2], ids[2], "nosuch"); n != 2 || err != nil {
		t.Fatalf("RetryDead = %d, %v; want 2", n, err)
	}
	for _, id := range ids[:3] {
		it, err := b.in.Item(ctx, "work", id)
		want := inspect.StateDead
		if id != ids[1] {
			want = inspect.StatePending
		}
		if err != nil || it.State != want || want == inspect.StatePending && (it.Attempts != 0 || it.Cause != "") {
			t.Errorf("after RetryDead, %s = %+v, %v; want %v", id, it, err, want)
		}
	}
	if n, err := b.in.PurgeDead(ctx, "work", ids[1], ids[0]); n != 1 || err != nil { // ids[0] is pending now: skipped
		t.Fatalf("PurgeDead = %d, %v; want 1", n, err)
	}
	if _, err := q.Value(ctx, ids[1]); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("a purged letter's value: %v; want ErrNotFound", err)
	}
	if n, err := b.in.RetryAllDead(ctx, "work", 2); n != 2 || err != nil {
		t.Fatalf("RetryAllDead max 2 = %d, %v; want 2", n, err)
	}
	if n, err := b.in.RetryAllDead(ctx, "work", 0); n != 1 || err != nil {
		t.Fatalf("RetryAllDead = %d, %v; want the 1 left", n, err)
	}
	if items, err = q.Claim(ctx, 10); err != nil || len(items) != 5 {
		t.Fatalf("Claim = %d, %v; want the 5 retried", len(items), err)
	}
	for _, it := range items {
		if err := q.Nack(ctx, it, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.in.PurgeAllDead(ctx, "work", 1); n != 1 || err != nil {
		t.Fatalf("PurgeAllDead max 1 = %d, %v; want 1", n, err)
	}
	if n, err := b.in.PurgeAllDead(ctx, "work", 0); n != 4 || err != nil {
		t.Fatalf("PurgeAllDead = %d, %v; want the 4 left", n, err)
	}
	if d, err := q.Depth(ctx); err != nil || d.Dead != 0 || d.Pending != 0 {
		t.Fatalf("Depth = %+v, %v; want empty", d, err)
	}
	if _, err := b.in.RetryDead(ctx, "work"); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("RetryDead without ids = %v; want ErrInvalidArgument", err)
	}
	if _, err := b.in.PurgeDead(ctx, "work", ""); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("PurgeDead of an empty id = %v; want ErrInvalidArgument", err)
	}
	if _, err := b.in.RetryAllDead(ctx, "work", -1); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("RetryAllDead max -1 = %v; want ErrInvalidArgument", err)
	}
}

// Pause and Resume act on the job's lock fleet-wide, as the recruiter's
// own do: a recruiter that has the job skips it while it is paused.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	b.writeRegistry(t, registry.Job{Name: "chore", BudgetMS: 50, EveryMS: 60000})
	if err := b.in.Pause(ctx, "chore", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	j, err := b.in.Job(ctx, "chore")
	if left := j.Lock.PausedUntil.Sub(j.Lock.Now); err != nil || !j.Lock.Paused || left < 9*time.Minute || left > 10*time.Minute {
		t.Fatalf("Job = %+v, %v; want paused for 10m", j, err)
	}
	cfg := recruiter.Config{Prefix: b.prefix, Inline: true}
	seams.SetRoll(&cfg, func() float64 { return 0 }, nil)
	rec, err := recruiter.New(b.rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Shutdown(context.Background()) })
	ran := 0
	if err := rec.Register(recruiter.Func("chore", func(context.Context) (recruiter.Report, error) { ran++; return recruiter.Report{}, nil }),
		recruiter.JobConfig{Rate: 1}); err != nil {
		t.Fatal(err)
	}
	rec.Enlist(ctx)
	if st := rec.Stats(); ran != 0 || len(st.Jobs) != 1 || st.Jobs[0].SkippedPaused != 1 {
		t.Fatalf("a paused job ran %d times; stats %+v", ran, st.Jobs)
	}
	if err := b.in.Resume(ctx, "chore"); err != nil {
		t.Fatal(err)
	}
	if j, err := b.in.Job(ctx, "chore"); err != nil || j.Lock.Paused {
		t.Fatalf("after Resume, Job = %+v, %v; want not paused", j, err)
	}
	if err := b.in.Pause(ctx, "nosuch", time.Minute); !errors.Is(err, inspect.ErrUnknownJob) {
		t.Errorf("Pause(unknown) = %v; want ErrUnknownJob", err)
	}
	for _, d := range []time.Duration{0, -time.Second, 31 * 24 * time.Hour} {
		if err := b.in.Pause(ctx, "chore", d); !errors.Is(err, inspect.ErrInvalidArgument) {
			t.Errorf("Pause(%v) = %v; want ErrInvalidArgument", d, err)
		}
	}
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := inspect.New(nil, inspect.Config{}); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("New(nil) = %v", err)
	}
	for _, cfg := range []inspect.Config{{Prefix: "a:b"}, {Preview: -1}, {Preview: 2 << 20}} {
		if _, err := inspect.New(b.rdb, cfg); !errors.Is(err, inspect.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v; want ErrInvalidConfig", cfg, err)
		}
	}
	if in, err := inspect.New(b.rdb, inspect.Config{}); err != nil || in.Prefix() != "worksteal" {
		t.Errorf("New(zero) = %v; want prefix worksteal", err)
	}
	for _, name := range []string{"pending", "leased", "delayed", "dead", "done"} {
		if s, err := inspect.ParseState(name); err != nil || s.String() != name {
			t.Errorf("ParseState(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := inspect.ParseState("running"); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Errorf("ParseState(running) = %v", err)
	}
}

// RunDelayed makes delayed items pending at once, by id.
func TestRunDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "work", queue.Config{})
	var ids []string
	for range 3 {
		id, _, err := q.EnqueueWith(ctx, []byte("x"), queue.EnqueueOptions{Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	pending, err := q.Enqueue(ctx, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.in.RunDelayed(ctx, "work", ids[0], ids[2], pending, "nosuch"); n != 2 || err != nil {
		t.Fatalf("RunDelayed = %d, %v; want 2", n, err)
	}
	items, err := q.Claim(ctx, 10)
	var claimed []string
	for _, it := range items {
		claimed = append(claimed, it.ID)
	}
	slices.Sort(claimed)
	want := []string{ids[0], ids[2], pending}
	slices.Sort(want)
	if err != nil || !slices.Equal(claimed, want) {
		t.Fatalf("Claim = %v, %v; want %v", claimed, err, want)
	}
	if d, err := q.Depth(ctx); err != nil || d.Delayed != 1 {
		t.Fatalf("Depth = %+v, %v; want one still delayed", d, err)
	}
}

// A registry entry that does not decode is listed by its name, with no
// config, rather than failing the list.
func TestMalformedRegistry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	qk, jk, tk := registry.Keys(b.prefix)
	if err := b.rdb.HSet(ctx, jk, "odd", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.HSet(ctx, qk, "oddq", "[]").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.HSet(ctx, tk, "oddq/t", "").Err(); err != nil {
		t.Fatal(err)
	}
	js, err := b.in.Jobs(ctx)
	if err != nil || len(js) != 1 || js[0].Name != "odd" || js[0].Budget != 0 {
		t.Fatalf("Jobs = %+v, %v; want odd, without config", js, err)
	}
	qs, err := b.in.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != "oddq" {
		t.Fatalf("Queues = %+v, %v", qs, err)
	}
	ts, err := b.in.TaskTypes(ctx)
	if err != nil || len(ts) != 1 || ts[0].Queue != "oddq" || ts[0].Type != "t" {
		t.Fatalf("TaskTypes = %+v, %v", ts, err)
	}
}

// Pending counts and pages the priorities' lanes too, one after the
// other: the default lane, then the others by name.
func TestItemsPendingAcrossLanes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testrig.Context(t, 30*time.Second)
	q := b.queue(t, "lanes", queue.Config{})
	if err := q.SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range []string{"", "critical", "low"} {
		for i := range 2 {
			id, _, err := q.EnqueueWith(ctx, fmt.Appendf(nil, "%s-%d", p, i), queue.EnqueueOptions{Priority: p})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
	}
	var got []string
	for offset := 0; offset < 6; offset += 4 {
		p, err := b.in.Items(ctx, "lanes", inspect.StatePending, offset, 4)
		if err != nil || p.Total != 6 {
			t.Fatalf("Items(pending, %d, 4) = %+v, %v; want a page of 6 in all", offset, p, err)
		}
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pending across lanes = %v; want %v (default, critical, low; oldest first)", got, want)
	}
}
