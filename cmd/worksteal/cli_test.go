package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

func TestStats(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	out := f.ok(t, "stats")
	for _, want := range []string{"what Redis holds", "dashboard", "QUEUE", "mail", "plain", "(all)", "jobs: 2 registered, 0 running, 0 paused"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Prefix string `json:"prefix"`
		Source string `json:"source"`
		Queues []struct {
			Name  string    `json:"name"`
			Depth jsonDepth `json:"depth"`
		} `json:"queues"`
		Total jsonDepth `json:"total"`
		Jobs  struct {
			Registered, Running, Paused int
		} `json:"jobs"`
	}
	f.okJSON(t, &doc, "stats")
	if doc.Prefix != f.prefix || !strings.Contains(doc.Source, "Redis") || len(doc.Queues) != 2 || doc.Queues[0].Name != "mail" ||
		doc.Queues[0].Depth.Dead != 3 || doc.Queues[0].Depth.Pending != 1 || doc.Total.Dead != 3 || doc.Jobs.Registered != 2 {
		t.Fatalf("stats --json = %+v", doc)
	}
}

func TestQueues(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	if out := f.ok(t, "queues"); !strings.Contains(out, "MAX ATTEMPTS") || !strings.Contains(out, "mail") {
		t.Errorf("queues:\n%s", out)
	}
	var qs []jsonQueue
	f.okJSON(t, &qs, "queues")
	if len(qs) != 2 || qs[0].Name != "mail" || qs[0].MaxAttempts != 1 || qs[0].LeaseMS != 30000 || qs[0].Depth.Dead != 3 ||
		qs[1].Name != "plain" || qs[1].MaxAttempts != 5 || qs[0].Registered == nil {
		t.Fatalf("queues --json = %+v", qs)
	}
}

func TestJobsAndSchedules(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	out := f.ok(t, "jobs")
	if !strings.Contains(out, "tasks.mail") || !strings.Contains(out, "every 1m0s") || !strings.Contains(out, "schedule 0 3 * * *") ||
		!strings.Contains(out, "what Redis holds") {
		t.Errorf("jobs:\n%s", out)
	}
	var js []jsonJob
	f.okJSON(t, &js, "jobs")
	if len(js) != 2 || js[0].Name != "nightly" || js[0].NextTick == nil || js[0].NextTick.Hour() != 3 ||
		js[1].Name != "tasks.mail" || js[1].EveryMS != 60000 || js[1].State != "idle" || js[1].Paused {
		t.Fatalf("jobs --json = %+v", js)
	}
	out = f.ok(t, "schedules")
	if !strings.Contains(out, "nightly") || strings.Contains(out, "tasks.mail") || !strings.Contains(out, "NEXT TICK") {
		t.Errorf("schedules:\n%s", out)
	}
	f.okJSON(t, &js, "schedules")
	if len(js) != 1 || js[0].Schedule != "0 3 * * *" {
		t.Fatalf("schedules --json = %+v", js)
	}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	var ts []struct{ Queue, Type, Codec string }
	f.okJSON(t, &ts, "types")
	if len(ts) != 1 || ts[0].Queue != "mail" || ts[0].Type != "send" || ts[0].Codec != "json" {
		t.Fatalf("types --json = %+v", ts)
	}
	if out := f.ok(t, "types"); !strings.Contains(out, "send") {
		t.Errorf("types:\n%s", out)
	}
}

type itemsDoc struct {
	Queue  string     `json:"queue"`
	State  string     `json:"state"`
	Offset int        `json:"offset"`
	Total  int64      `json:"total"`
	Items  []jsonItem `json:"items"`
}

func ids(d itemsDoc) []string {
	var out []string
	for _, it := range d.Items {
		out = append(out, it.ID)
	}
	return out
}

func TestDeadListRetryPurge(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	out := f.ok(t, "dead", "list", "mail")
	if !strings.Contains(out, "550 mailbox unavailable") || !strings.Contains(out, `send {"To":"ann"}`) || !strings.Contains(out, "1 to 3 of 3") {
		t.Errorf("dead list:\n%s", out)
	}
	// Letters that died in the same millisecond are in id order.
	var all, d itemsDoc
	f.okJSON(t, &all, "dead", "list", "mail")
	if all.Total != 3 || len(all.Items) != 3 {
		t.Fatalf("dead list --json = %+v", all)
	}
	f.okJSON(t, &d, "dead", "list", "mail", "--offset", "1", "--limit", "1")
	if d.Total != 3 || d.Offset != 1 || !slices.Equal(ids(d), ids(all)[1:2]) || d.Items[0].Task == nil ||
		!strings.HasPrefix(d.Items[0].Task.Args, `{"To":`) || d.Items[0].Cause != "550 mailbox unavailable" || d.Items[0].State != "dead" {
		t.Fatalf("dead list --offset 1 --limit 1 --json = %+v", d)
	}

	f.okJSON(t, &struct{}{}, "dead", "retry", "mail", f.dead[0])
	var act struct {
		Queue, Action string
		Count         int
	}
	// An id that is no dead letter: the others are done, and it is named
	// with exit 3.
	out, errOut, code := f.cli(t, "dead", "purge", "mail", f.dead[1], "nosuch", "--json")
	if err := json.Unmarshal([]byte(out), &act); err != nil || code != exitNotFound || !strings.Contains(errOut, "(1 of 2 ids; the others were done): nosuch (not found)") {
		t.Fatalf("dead purge of a dead letter and nosuch: exit %d, stderr %q, stdout %q (%v)", code, errOut, out, err)
	}
	if act.Queue != "mail" || act.Action != "purge" || act.Count != 1 {
		t.Fatalf("dead purge = %+v; want 1 purged", act)
	}
	f.okJSON(t, &d, "items", "mail", "pending")
	if !slices.Equal(ids(d), []string{f.live, f.dead[0]}) {
		t.Fatalf("pending after the retry = %v; want %v", ids(d), []string{f.live, f.dead[0]})
	}
	f.fails(t, exitUsage, "--max goes with --all", "dead", "retry", "mail", f.dead[2], "--max", "1")
	f.fails(t, exitUsage, "max -1 is negative", "dead", "retry", "mail", "--all", "--max", "-1")
	if out := f.ok(t, "dead", "retry", "--all", "--max", "1", "mail"); !strings.Contains(out, "moved back to pending 1 dead letters") {
		t.Errorf("dead retry --all --max 1: %q", out)
	}
	f.okJSON(t, &d, "dead", "list", "mail")
	if d.Total != 0 || len(d.Items) != 0 {
		t.Fatalf("dead letters left: %+v", d)
	}
	f.okJSON(t, &act, "dead", "purge", "mail", "--all")
	if act.Count != 0 {
		t.Fatalf("dead purge --all of none = %+v", act)
	}
	f.fails(t, exitUsage, "ids or --all", "dead", "retry", "mail", "x", "--all")
	f.fails(t, exitUsage, "name the ids", "dead", "purge", "mail")
	f.fails(t, exitNotFound, "unknown queue", "dead", "list", "nosuch")
	f.fails(t, exitUsage, "state", "items", "mail", "running")
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	if out := f.ok(t, "pause", "tasks.mail", "15m"); !strings.Contains(out, "tasks.mail paused for 15m0s") {
		t.Errorf("pause: %q", out)
	}
	var js []jsonJob
	f.okJSON(t, &js, "jobs")
	j := js[1]
	if !j.Paused || j.State != "paused" || j.PausedUntil == nil || time.Until(*j.PausedUntil) < 14*time.Minute {
		t.Fatalf("after pause, job = %+v", j)
	}
	f.okJSON(t, &j, "resume", "tasks.mail")
	if j.Paused || j.Name != "tasks.mail" {
		t.Fatalf("resume --json = %+v", j)
	}
	f.okJSON(t, &j, "pause", "nightly") // the default: an hour
	if !j.Paused || time.Until(*j.PausedUntil) < 59*time.Minute || time.Until(*j.PausedUntil) > time.Hour {
		t.Fatalf("pause without FOR = %+v; want an hour", j)
	}
	f.fails(t, exitNotFound, "unknown job", "pause", "nosuch", "1m")
	f.fails(t, exitUsage, "duration", "pause", "nightly", "soon")
	f.fails(t, exitUsage, "at most", "pause", "nightly", "9999h")
	f.fails(t, exitUsage, "JOB", "resume")
}

func TestTaskShow(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	out := f.ok(t, "task", "show", f.dead[2])
	for _, want := range []string{"dead", "mail", "send", `{"To":"cy"}`, "550 mailbox unavailable"} {
		if !strings.Contains(out, want) {
			t.Errorf("task show lacks %q:\n%s", want, out)
		}
	}
	var it jsonItem
	f.okJSON(t, &it, "task", "show", "--queue", "mail", f.live)
	if it.ID != f.live || it.State != "pending" || it.Queue != "mail" || it.Task == nil || it.Task.Type != "send" || it.Attempts != 0 {
		t.Fatalf("task show --json = %+v", it)
	}
	f.fails(t, exitNotFound, "not found", "task", "show", "nosuch")
	f.fails(t, exitNotFound, "unknown queue", "task", "show", "--queue", "nosuch", f.live)
	if out := f.ok(t, "task", "cancel", f.live); !strings.Contains(out, "mail: "+f.live+": canceled 1 items, 0 of them running") {
		t.Errorf("task cancel said %q", out)
	}
	f.fails(t, exitNotFound, "not found", "task", "show", f.live)
	if out := f.ok(t, "task", "cancel", "--queue", "mail", f.live); !strings.Contains(out, "canceled before") {
		t.Errorf("a second task cancel said %q", out)
	}
	var r struct {
		Canceled int  `json:"canceled"`
		Finished bool `json:"finished"`
	}
	if f.okJSON(t, &r, "task", "cancel", f.dead[2]); !r.Finished || r.Canceled != 0 {
		t.Errorf("task cancel of a dead letter --json = %+v, want finished", r)
	}
	f.fails(t, exitNotFound, "not found", "task", "cancel", "nosuch")
	f.fails(t, exitUsage, "ID", "task", "cancel")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	if out := f.ok(t, "help"); !strings.Contains(out, "dead retry QUEUE") || !strings.Contains(out, "-prefix") {
		t.Errorf("help:\n%s", out)
	}
	f.fails(t, exitUsage, "no command", "--json")
	f.fails(t, exitUsage, "unknown command", "frobnicate")
	f.fails(t, exitUsage, "flag provided but not defined", "stats", "--bogus")
	f.fails(t, exitUsage, "no arguments", "stats", "extra")
	f.fails(t, exitUsage, "Prefix", "--prefix", "a:b", "stats")
	f.fails(t, exitUsage, "--redis", "--redis", "http://x", "stats")
	f.fails(t, exitUsage, "give one", "--cluster", "redis://a:1", "--sentinel", "redis://b:2", "stats")
}

// A server that does not answer: exit 1, within the timeout.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	f, srv := localFleet(t)
	srv.Kill()
	began := time.Now()
	f.fails(t, exitFailed, "", "--timeout", "2s", "stats")
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("stats against a dead server took %v", d)
	}
}

// The least-privilege users of docs/redis.md: the read-only one runs
// every read and is refused every action (exit 4), with ACL LOG empty
// for its reads; the operator runs them all.
func TestACLUsers(t *testing.T) {
	t.Parallel()
	f, srv := localFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, read, op := aclUsers(t, f, srv)
	chain, fan := plainFlows(t, f)
	for _, args := range [][]string{{"stats"}, {"queues"}, {"jobs"}, {"schedules"}, {"types"}, {"dead", "list", "mail"},
		{"items", "mail", "pending"}, {"task", "show", f.dead[0]}, {"chain", "plain", chain}, {"fanout", "plain", fan}} {
		read.ok(t, args...)
	}
	if log, err := admin.Do(ctx, "ACL", "LOG").Slice(); err != nil || len(log) != 0 {
		t.Fatalf("the reads as worksteal-read left ACL LOG %v, %v; want it empty", log, err)
	}
	read.fails(t, exitDenied, "", "dead", "retry", "mail", f.dead[0])
	read.fails(t, exitDenied, "", "dead", "purge", "mail", "--all")
	read.fails(t, exitDenied, "", "pause", "nightly", "1m")
	read.fails(t, exitDenied, "", "task", "cancel", f.live)
	if n, err := f.mail.Depth(ctx); err != nil || n.Dead != 3 {
		t.Fatalf("after the refused actions, Depth = %+v, %v; want 3 dead", n, err)
	}
	if err := admin.ACLLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	op.ok(t, "dead", "retry", "mail", f.dead[0])
	op.ok(t, "dead", "purge", "mail", f.dead[1])
	op.ok(t, "dead", "retry", "mail", "--all")
	op.ok(t, "pause", "nightly", "1m")
	op.ok(t, "resume", "nightly")
	op.ok(t, "task", "cancel", f.live)
	op.ok(t, "stats")
	if log, err := admin.Do(ctx, "ACL", "LOG").Slice(); err != nil || len(log) != 0 {
		t.Fatalf("the operator's commands left ACL LOG %v, %v; want it empty", log, err)
	}
	if n, err := f.mail.Depth(ctx); err != nil || n.Dead != 0 || n.Pending != 3 {
		t.Fatalf("after the operator's actions, Depth = %+v, %v; want 3 pending (a canceled one's tombstone)", n, err)
	}
	if _, err := f.mail.Wait(ctx, f.live); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Wait of the task canceled as the operator = %v, want queue.ErrCanceled", err)
	}
}

// aclUsers makes the users of docs/redis.md's grants for the fleet's
// prefix, password pw, and returns the admin's client and the fleet as
// worksteal-read and as worksteal-operator; ACL LOG is empty.
func aclUsers(t *testing.T, f *fleet, srv *redistest.Server) (admin *redis.Client, read, op *fleet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin = srv.Client(t)
	for _, grant := range []string{grantRead, grantOperate} {
		// The grant for the test's prefix, with a password.
		g := strings.NewReplacer("~worksteal:*", "~"+f.prefix+":*", "~{worksteal:*", "~{"+f.prefix+":*", ">PASSWORD", ">pw").Replace(grant)
		var args []any
		for _, w := range strings.Fields(strings.TrimPrefix(g, "ACL ")) {
			args = append(args, w)
		}
		if err := admin.Do(ctx, append([]any{"ACL"}, args...)...).Err(); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	if err := admin.ACLLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	as := func(user string) *fleet {
		g := *f
		g.flags = []string{"--redis", strings.Replace(srv.URL(), "redis://", "redis://"+user+":pw@", 1)}
		return &g
	}
	return admin, as("worksteal-read"), as("worksteal-operator")
}

// plainFlows enqueues a chain and a fan-out to queue plain and returns
// their ids.
func plainFlows(t *testing.T, f *fleet) (chain, fan string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.New(f.rdb, "plain", queue.Config{Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	client, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	steps := []tasks.Step{sendTask.Step(mailArgs{To: "a"}), sendTask.Step(mailArgs{To: "b"})}
	if chain, err = tasks.EnqueueChain(ctx, client, steps); err != nil {
		t.Fatal(err)
	}
	if fan, err = tasks.EnqueueFanOut(ctx, client, steps, sendTask.Step(mailArgs{})); err != nil {
		t.Fatal(err)
	}
	return chain, fan
}

// docs/redis.md gives the grants the tests use.
func TestGrantsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/redis.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{grantRead, grantOperate} {
		if !strings.Contains(string(doc), g) {
			t.Errorf("docs/redis.md lacks the grant\n%s", g)
		}
	}
	for name, w := range actionWrites {
		if !regexp.MustCompile("(?m)^\\|.*`" + regexp.QuoteMeta(name) + "`.*`" + regexp.QuoteMeta(w) + "[` ]").Match(doc) {
			t.Errorf("docs/redis.md's table does not give %s the writes %s", name, w)
		}
	}
}

// On a 3-master cluster, through --cluster: reads and actions.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	addrs := c.Addrs()
	url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	f := newFleet(t, c.Client(t), "--cluster", url)
	var qs []jsonQueue
	f.okJSON(t, &qs, "queues")
	if len(qs) != 2 || qs[0].Depth.Dead != 3 {
		t.Fatalf("queues on a cluster = %+v", qs)
	}
	f.ok(t, "dead", "retry", "mail", "--all")
	f.ok(t, "pause", "tasks.mail", "1m")
	var js []jsonJob
	f.okJSON(t, &js, "jobs")
	if len(js) != 2 || !js[1].Paused {
		t.Fatalf("jobs on a cluster = %+v", js)
	}
	var it jsonItem
	f.okJSON(t, &it, "task", "show", f.dead[0])
	if it.State != "pending" {
		t.Fatalf("task show on a cluster = %+v", it)
	}
}

// Through Sentinels, with --sentinel and --master.
func TestSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	addrs := s.Addrs()
	url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	f := newFleet(t, s.Client(t), "--sentinel", url, "--master", redistest.SentinelMaster)
	var qs []jsonQueue
	f.okJSON(t, &qs, "queues")
	if len(qs) != 2 || qs[0].Depth.Dead != 3 {
		t.Fatalf("queues through Sentinel = %+v", qs)
	}
	f.ok(t, "dead", "purge", "mail", "--all")
	f.ok(t, "pause", "nightly", "5m")
	f.fails(t, exitFailed, "", "--sentinel", url, "--master", "nosuch", "--timeout", "3s", "stats")
}

// rediss:// with --cacert, the CA of a private server.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t)
	f := newFleet(t, srv.Client(t), "--redis", srv.URL(), "--cacert", srv.CAFile)
	var qs []jsonQueue
	f.okJSON(t, &qs, "queues")
	if len(qs) != 2 || qs[0].Depth.Dead != 3 {
		t.Fatalf("queues over TLS = %+v", qs)
	}
	f.ok(t, "dead", "retry", "mail", "--all")
	g := *f
	g.flags = []string{"--redis", srv.URL()} // the system's roots do not know the test CA
	g.fails(t, exitFailed, "certificate", "--timeout", "3s", "stats")
	g.flags = []string{"--redis", strings.Replace(srv.URL(), "rediss", "redis", 1), "--cacert", srv.CAFile}
	g.fails(t, exitUsage, "use rediss://", "stats")
	g.flags = []string{"--redis", srv.URL(), "--cacert", "no-such-file.pem"}
	g.fails(t, exitUsage, "--cacert", "stats")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"li\nne\x00\xff", `li\nne\x00�`},
		{`back\slash`, `back\\slash`},
		{"abcdefghij", "abcdefghij"},
		{"abcdefghijk", "abcdefghi…"},
		{"\u2028日本", `\u2028日本`},
	} {
		if got := preview([]byte(c.in), 10); got != c.want {
			t.Errorf("preview(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// A chain of 3 and a fan-out of 3, canceled with tasks.Cancel: chain and
// fanout show canceled, as tasks.ChainStatus reads them, in tables and
// in JSON.
func TestFlows(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := tasks.NewClient(f.mail)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := tasks.EnqueueChain(ctx, client, []tasks.Step{
		sendTask.Step(mailArgs{To: "a"}), sendTask.Step(mailArgs{To: "b"}), sendTask.Step(mailArgs{To: "c"})})
	if err != nil {
		t.Fatal(err)
	}
	fan, err := tasks.EnqueueFanOut(ctx, client, []tasks.Step{
		sendTask.Step(mailArgs{To: "a"}), sendTask.Step(mailArgs{To: "b"}), sendTask.Step(mailArgs{To: "c"})},
		sendTask.Step(mailArgs{To: "all"}))
	if err != nil {
		t.Fatal(err)
	}
	out := f.ok(t, "chain", "mail", chain)
	for _, want := range []string{"running", "1 of 3", chain} {
		if !strings.Contains(out, want) {
			t.Errorf("chain of a running chain lacks %q:\n%s", want, out)
		}
	}
	for _, id := range []string{chain, fan} {
		if err := tasks.Cancel(ctx, client, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
	if p, err := tasks.ChainStatus(ctx, client, chain); err != nil || p.State != tasks.StateCanceled {
		t.Fatalf("ChainStatus = %+v, %v; want canceled", p, err)
	}
	out = f.ok(t, "chain", "mail", chain)
	if !regexp.MustCompile(`(?m)^state\s+canceled$`).MatchString(out) || !strings.Contains(out, "1 of 3") {
		t.Errorf("chain of a canceled chain:\n%s", out)
	}
	var c jsonChain
	if f.okJSON(t, &c, "chain", "mail", chain); c.ID != chain || c.Queue != "mail" || c.State != "canceled" || c.Step != 1 || c.Steps != 3 || c.Current != chain {
		t.Errorf("chain --json = %+v; want canceled at step 1 of 3", c)
	}
	out = f.ok(t, "fanout", "mail", fan)
	if !regexp.MustCompile(`(?m)^state\s+canceled$`).MatchString(out) || !regexp.MustCompile(`(?m)^children\s+3$`).MatchString(out) {
		t.Errorf("fanout of a canceled fan-out:\n%s", out)
	}
	var j jsonFanOut
	if f.okJSON(t, &j, "fanout", "mail", fan); j.ID != fan || j.State != "canceled" || j.Children != 3 || j.Done != 0 {
		t.Errorf("fanout --json = %+v; want canceled, 0 of 3 done", j)
	}
	f.fails(t, exitNotFound, "not found", "chain", "mail", fan+"x")
	f.fails(t, exitNotFound, "not found", "fanout", "mail", chain)
	f.fails(t, exitUsage, "QUEUE ID", "chain", "mail")
}
