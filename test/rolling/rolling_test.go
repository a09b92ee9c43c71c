package rolling_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

const (
	prefix, queueName = "roll", "mixed"
	runsKey           = "rolltest:runs:" // + a task's K: its runs in every release (outside the prefix)
	// hold is how long a first run that fails, snoozes or asks for a retry
	// holds its task back: longer than a release takes to run the rest of
	// a mix on a loaded machine, so that the next run is the next phase's.
	hold = 3 * time.Second
	// traceKeep is how long a trace context is kept past its task's due
	// time (internal/qstore/traces.lua).
	traceKeep = 7 * 24 * time.Hour
)

// batching is both releases' Mux jobs': a RedisTimeout well above the
// default 250ms, which a claim under -race on a loaded machine can pass,
// its reply lost and its batch leased until the lease ends.
var batching = jobs.Batching{Batch: 8, RedisTimeout: 2 * time.Second}

// previousSpec is what a previous-release process does (the driver's spec).
type previousSpec struct {
	Do                  string
	Addr, Prefix, Queue string
	Log                 string
	Runs                string
	Until               string
	Lease, Hold, GiveUp time.Duration
	Pace                time.Duration // how long each run takes
	MaxAttempts         int
	Tasks               []mix
}

// mix is one enqueue: a task, a chain of 3 or a fan-out of 3 and a final
// (the driver's mix). A Mode makes its first run (a chain's step 2's, a
// fan-out's child 2's) fail: with an error in either release, and in this
// one with tasks.Snooze ("snooze") or tasks.RetryAfter ("retryafter").
type mix struct {
	Kind             string
	K                string
	Mode             string
	Priority, Unique string
	Delay            time.Duration
}

type args struct {
	K, Mode string
	Add     int
}

var (
	plain = tasks.Define[args, string]("roll.plain")
	add   = tasks.Define[args, int]("roll.add")
	sum   = tasks.Define[args, int]("roll.sum")
)

// mixOf is the mix of one direction, its Ks prefixed by p: every kind,
// with and without a failing first run.
func mixOf(p string) []mix {
	return []mix{
		{Kind: "plain", K: p + "plain1"},
		{Kind: "plain", K: p + "plain2"},
		{Kind: "plain", K: p + "plain3"},
		{Kind: "plain", K: p + "high1", Priority: "high"},
		{Kind: "plain", K: p + "high2", Priority: "high", Mode: "retryafter"},
		{Kind: "plain", K: p + "uniq", Unique: p + "u"},
		{Kind: "plain", K: p + "uniqdup", Unique: p + "u"}, // adds nothing: uniq's id
		{Kind: "plain", K: p + "later", Delay: 500 * time.Millisecond},
		{Kind: "plain", K: p + "fail1", Mode: "fail"},
		{Kind: "plain", K: p + "fail2", Mode: "fail"},
		{Kind: "plain", K: p + "snooze1", Mode: "snooze"},
		{Kind: "plain", K: p + "retry1", Mode: "retryafter"},
		{Kind: "chain", K: p + "chain1"},
		{Kind: "chain", K: p + "chain2", Mode: "snooze"},
		{Kind: "chain", K: p + "chain3", Mode: "fail"},
		{Kind: "fanout", K: p + "fan1"},
		{Kind: "fanout", K: p + "fan2", Mode: "retryafter"},
		{Kind: "fanout", K: p + "fan3", Mode: "fail"},
	}
}

// run is one handler run of a task, as a release logged it.
type run struct {
	release string // "previous" or "this"
	typ     string
	n       int // its number among the task's runs, in every release
	attempt int // as this release's tasks.InfoFrom says (0: the previous release's, which cannot know)
	at      time.Time
}

// rig is the test's Redis, queue and this release's side.
type rig struct {
	t      *testing.T
	srv    *redistest.Server
	rdb    *redis.Client
	q      *queue.Queue
	client *tasks.Client
	mux    *tasks.Mux
	spans  *tracetest.InMemoryExporter
	bin    string // the previous release's driver
	dir    string
	logger *slog.Logger

	lostLeases int           // runs an attempt late (checkAttempt)
	pace       time.Duration // how long each of this release's runs takes

	mu   sync.Mutex
	runs []string // this release's run lines, as the driver writes its own
}

func (r *rig) queueConfig() queue.Config {
	return queue.Config{Prefix: prefix, Lease: 10 * time.Second, MaxAttempts: 5, BackoffBase: hold, BackoffMax: hold}
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, srv: redistest.Start(t), bin: buildPrevious(t), dir: t.TempDir()}
	r.rdb = r.srv.Client(t)
	var err error
	if r.q, err = queue.New(r.rdb, queueName, r.queueConfig()); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 10*time.Second)
	if err := r.q.SetPriorities(ctx, map[string]int{"high": 3, "default": 1}); err != nil {
		t.Fatal(err)
	}
	// A real SDK provider: with it this release stores each task's trace
	// context beside it, which the previous release does not know.
	r.spans = tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	if r.client, err = tasks.NewClient(r.q, tasks.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	// This release's logs, as the previous release's go to its .out
	// files: what a failure prints.
	logFile, err := os.Create(filepath.Join(r.dir, "this.out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	// One handler: it serializes its writes, and those of the mux's and
	// the recruiter's loggers derived from it.
	r.logger = slog.New(slog.NewTextHandler(logFile, nil))
	t.Cleanup(func() { r.printLogsOnFailure(t) })
	r.mux = tasks.NewMux(tasks.WithTracerProvider(tp), tasks.WithLogger(r.logger))
	r.handle()
	return r
}

// handle registers this release's handlers: the driver's, and, for a
// first run with mode "snooze" or "retryafter", this release's steering
// errors.
func (r *rig) handle() {
	ran := func(ctx context.Context, typ string, a args) error {
		n, err := r.rdb.Incr(ctx, runsKey+a.K).Result()
		if err != nil {
			return err
		}
		info, _ := tasks.InfoFrom(ctx)
		r.mu.Lock()
		r.runs = append(r.runs, fmt.Sprintf("R this %s %s %d %d %d", typ, a.K, n, info.Attempt, time.Now().UnixMilli()))
		pace := r.pace
		r.mu.Unlock()
		time.Sleep(pace)
		if n > 1 || a.Mode == "" {
			return nil
		}
		switch a.Mode {
		case "snooze":
			return tasks.Snooze(hold)
		case "retryafter":
			return tasks.RetryAfter(hold, errors.New(a.K+": retry after a while"))
		}
		return fmt.Errorf("%s (%s): its first run fails", a.K, a.Mode)
	}
	must := func(err error) {
		if err != nil {
			r.t.Fatal(err)
		}
	}
	must(plain.Handle(r.mux, func(ctx context.Context, a args) (string, error) {
		if err := ran(ctx, plain.Type(), a); err != nil {
			return "", err
		}
		return "done:" + a.K, nil
	}))
	must(add.Handle(r.mux, func(ctx context.Context, a args) (int, error) {
		if err := ran(ctx, add.Type(), a); err != nil {
			return 0, err
		}
		prev, _, err := tasks.PreviousResult[int](ctx)
		return prev + a.Add, err
	}))
	must(sum.Handle(r.mux, func(ctx context.Context, a args) (int, error) {
		if err := ran(ctx, sum.Type(), a); err != nil {
			return 0, err
		}
		rs, ok, err := tasks.ChildResults[int](ctx)
		if err != nil || !ok {
			return 0, fmt.Errorf("%s: child results (%v): %w", a.K, ok, err)
		}
		total := a.Add
		for _, v := range rs {
			total += v
		}
		return total, nil
	}))
}

// enqueue enqueues mixes through this release's client, traced, and
// returns the ids by K.
func (r *rig) enqueue(ctx context.Context, mixes []mix) map[string]string {
	r.t.Helper()
	ids := map[string]string{}
	for _, m := range mixes {
		var opts []tasks.EnqueueOption
		if m.Priority != "" {
			opts = append(opts, tasks.Priority(m.Priority))
		}
		if m.Unique != "" {
			opts = append(opts, tasks.Unique(m.Unique, time.Minute))
		}
		if m.Delay > 0 {
			opts = append(opts, tasks.Delay(m.Delay))
		}
		var id string
		var err error
		switch m.Kind {
		case "plain":
			id, err = plain.Enqueue(ctx, r.client, args{K: m.K, Mode: m.Mode}, opts...)
		case "chain":
			id, err = tasks.EnqueueChain(ctx, r.client, []tasks.Step{
				add.Step(args{K: m.K + ".1", Add: 1}),
				add.Step(args{K: m.K + ".2", Mode: m.Mode, Add: 10}),
				add.Step(args{K: m.K + ".3", Add: 100}),
			}, opts...)
		case "fanout":
			id, err = tasks.EnqueueFanOut(ctx, r.client, []tasks.Step{
				add.Step(args{K: m.K + ".1", Add: 1}),
				add.Step(args{K: m.K + ".2", Mode: m.Mode, Add: 2}),
				add.Step(args{K: m.K + ".3", Add: 3}),
			}, sum.Step(args{K: m.K + ".f", Add: 1000}), opts...)
		}
		if err != nil {
			r.t.Fatalf("this release: enqueue %s: %v", m.K, err)
		}
		ids[m.K] = id
	}
	return ids
}

// previous runs the previous release's driver to its end.
func (r *rig) previous(ctx context.Context, name string, s previousSpec) (log string) {
	r.t.Helper()
	done := r.startPrevious(ctx, name, s)
	if err := <-done; err != nil {
		r.t.Fatal(err)
	}
	return filepath.Join(r.dir, name+".log")
}

// startPrevious starts the previous release's driver; the channel gets
// its end (nil: exit 0).
func (r *rig) startPrevious(ctx context.Context, name string, s previousSpec) <-chan error {
	r.t.Helper()
	s.Addr, s.Prefix, s.Queue = r.srv.Addr(), prefix, queueName
	s.Log, s.Runs = filepath.Join(r.dir, name+".log"), runsKey
	c := r.queueConfig()
	s.Lease, s.Hold, s.MaxAttempts, s.GiveUp = c.Lease, hold, c.MaxAttempts, time.Minute
	spec, err := json.Marshal(s)
	if err != nil {
		r.t.Fatal(err)
	}
	out := filepath.Join(r.dir, name+".out")
	f, err := os.Create(out)
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, r.bin, string(spec))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start the previous release's %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		if err != nil {
			text, _ := os.ReadFile(out)
			err = fmt.Errorf("the previous release's %s: %v\n%s", name, err, text)
		}
		done <- err
	}()
	return done
}

// runThis runs this release's Mux through a recruiter, enlisted inline as
// a web server's fast exits would, until the queue has nothing pending or
// leased ("idle") or nothing delayed either ("empty").
func (r *rig) runThis(ctx context.Context, until string) error {
	rec, err := recruiter.New(r.rdb, recruiter.Config{Prefix: prefix, Inline: true,
		Logger: r.logger})
	if err != nil {
		return err
	}
	job, err := r.mux.Job(r.q, jobs.DrainConfig{Batching: batching})
	if err != nil {
		return err
	}
	promote, err := jobs.PromoteDue(r.q, jobs.PromoteConfig{})
	if err != nil {
		return err
	}
	if err := rec.Register(job, recruiter.JobConfig{Rate: 0.8, Budget: 200 * time.Millisecond}); err != nil {
		return err
	}
	if err := rec.Register(promote, recruiter.JobConfig{Rate: 0.2, Budget: 50 * time.Millisecond}); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := rec.Shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
	}()
	giveUp := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		rec.Enlist(ctx)
		if i%10 == 0 {
			d, err := r.q.Depth(ctx)
			if err == nil && d.Pending+d.Leased == 0 && (until == "idle" || d.Delayed == 0) {
				return nil
			}
			if time.Now().After(giveUp) {
				return fmt.Errorf("this release: queue not %s after a minute: %+v", until, d)
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// runsByK parses the run lines of both releases: this one's and the
// driver's logs.
func (r *rig) runsByK(logs ...string) map[string][]run {
	r.t.Helper()
	r.mu.Lock()
	lines := slices.Clone(r.runs)
	r.mu.Unlock()
	for _, l := range logs {
		lines = append(lines, readLines(r.t, l)...)
	}
	byK := map[string][]run{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "R" {
			continue
		}
		if len(f) != 7 {
			r.t.Fatalf("run line %q", l)
		}
		n, err1 := strconv.Atoi(f[4])
		a, err2 := strconv.Atoi(f[5])
		ms, err3 := strconv.ParseInt(f[6], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			r.t.Fatalf("run line %q", l)
		}
		byK[f[3]] = append(byK[f[3]], run{release: f[1], typ: f[2], n: n, attempt: a, at: time.UnixMilli(ms)})
	}
	for _, rs := range byK {
		slices.SortFunc(rs, func(a, b run) int { return a.n - b.n })
	}
	return byK
}

// enqueued reads the ids by K that a driver's enqueue logged.
func enqueued(t *testing.T, log string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, l := range readLines(t, log) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "E" {
			ids[f[1]] = f[2]
		}
	}
	return ids
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// printLogsOnFailure prints the logs of both releases' recruiters and
// muxes when the test failed.
func (r *rig) printLogsOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	outs, _ := filepath.Glob(filepath.Join(r.dir, "*.out"))
	for _, out := range outs {
		data, _ := os.ReadFile(out)
		t.Logf("%s:\n%s", filepath.Base(out), tail(data, 8192))
	}
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
