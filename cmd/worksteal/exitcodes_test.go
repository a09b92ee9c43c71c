package main

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
)

// Every exit code that worksteal help lists is produced here, against a
// real redis-server, with the message the help promises.
// or separates the texts of which stderr must hold one: Redis 7.0 names
// no command that a script was refused, and the CLI then lists the
// action's writes; Redis 7.4 and Valkey 8 name it.
const or = " | or | "

func TestExitCodes(t *testing.T) {
	t.Parallel()
	f, srv := localFleet(t)
	admin, read, _ := aclUsers(t, f, srv)
	// A reader without HGETALL, which the registry's read sends directly.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.Do(ctx, "ACL", "SETUSER", "no-hgetall", "on", ">pw", "~*", "-@all", "+hmget", "+exists").Err(); err != nil {
		t.Fatal(err)
	}
	partial := *f
	partial.flags = []string{"--redis", strings.Replace(srv.URL(), "redis://", "redis://no-hgetall:pw@", 1)}
	down := redistest.Start(t)
	down.Kill()
	gone := *f
	gone.flags = []string{"--redis", down.URL(), "--timeout", "3s"}
	elsewhere := *f
	elsewhere.prefix = f.prefix + "-typo"

	cases := []struct {
		name string
		f    *fleet
		args []string
		code int
		says []string
	}{
		{"done", f, []string{"stats"}, exitOK, nil},
		{"Redis down", &gone, []string{"stats"}, exitFailed, []string{"registry"}},
		{"unknown command", f, []string{"frobnicate"}, exitUsage, []string{"unknown command"}},
		{"unknown state", f, []string{"items", "mail", "sleeping"}, exitUsage, []string{"pending, leased, delayed or dead"}},
		{"unknown queue", f, []string{"dead", "list", "nosuch"}, exitNotFound, []string{"unknown queue"}},
		{"unknown job", f, []string{"pause", "nosuch"}, exitNotFound, []string{"unknown job"}},
		{"retry of no dead letter", f, []string{"dead", "retry", "mail", "nosuchid"}, exitNotFound, []string{"nosuchid (not found)"}},
		{"purge of no dead letter", f, []string{"dead", "purge", "mail", "nosuchid"}, exitNotFound, []string{"nosuchid (not found)"}},
		{"retry of a pending item", f, []string{"dead", "retry", "mail", f.live}, exitNotFound, []string{f.live + " (pending)"}},
		{"refused by the ACL", read, []string{"dead", "retry", "mail", f.dead[0]}, exitDenied,
			[]string{"docs/redis.md", "worksteal-operator", "dead retry's script, which writes with +lpush +hset +hdel +zrem" + or + "lacks the command LPUSH (+lpush)"}},
		{"refused by the ACL: a command", &partial, []string{"queues"}, exitDenied,
			[]string{"lacks the command HGETALL (+hgetall)", "docs/redis.md"}},
		{"refused by the ACL: pause", read, []string{"pause", "nightly"}, exitDenied,
			[]string{"docs/redis.md", "pause's script, which writes with +hset +hdel +pttl +pexpire" + or + "lacks the command HSET (+hset)"}},
		{"empty prefix: stats", &elsewhere, []string{"stats"}, exitEmpty,
			[]string{"no queues or jobs under prefix " + elsewhere.prefix + ": is --prefix right?"}},
		{"empty prefix: queues", &elsewhere, []string{"queues"}, exitEmpty, []string{"is --prefix right?"}},
		{"empty prefix: a queue", &elsewhere, []string{"dead", "list", "mail"}, exitEmpty, []string{"is --prefix right?", "unknown queue"}},
	}
	seen := map[int]bool{}
	for _, c := range cases {
		_, errOut, code := c.f.cli(t, c.args...)
		seen[code] = true
		if code != c.code {
			t.Errorf("%s: worksteal %s: exit %d, stderr %q; want exit %d", c.name, strings.Join(c.args, " "), code, errOut, c.code)
			continue
		}
		for _, want := range c.says {
			if !slices.ContainsFunc(strings.Split(want, or), func(w string) bool { return strings.Contains(errOut, w) }) {
				t.Errorf("%s: worksteal %s: stderr %q lacks %q", c.name, strings.Join(c.args, " "), errOut, want)
			}
		}
	}
	// The help's list, read from the help itself.
	help := f.ok(t, "help")
	_, list, _ := strings.Cut(help, "Exit codes:")
	list, _, _ = strings.Cut(list, ".\n")
	listed := regexp.MustCompile(`(?:^|,)\s+(\d) `).FindAllStringSubmatch(list, -1)
	if len(listed) < 6 {
		t.Fatalf("help lists exit codes %q; want 0 to 5", list)
	}
	for _, m := range listed {
		if n, _ := strconv.Atoi(m[1]); !seen[n] {
			t.Errorf("help lists exit %d, which no case produced", n)
		}
	}
}

// The states that items's message offers are the ones it takes, and
// the help names the same.
func TestItemStates(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	_, errOut, code := f.cli(t, "items", "mail", "sleeping")
	if code != exitUsage {
		t.Fatalf("items mail sleeping: exit %d", code)
	}
	offered := regexp.MustCompile(`want ([a-z, ]+) or ([a-z]+)`).FindStringSubmatch(errOut)
	if offered == nil {
		t.Fatalf("items mail sleeping said %q: no list of states", errOut)
	}
	states := append(strings.Split(offered[1], ", "), offered[2])
	for _, s := range states {
		f.ok(t, "items", "mail", s)
	}
	if help := f.ok(t, "help"); !strings.Contains(help, "a page of "+offered[1]+" or "+offered[2]+" items") {
		t.Errorf("help names other states than %v:\n%s", states, help)
	}
	// done is no list, and is not offered: task show shows a done item.
	f.fails(t, exitUsage, "task show", "items", "mail", "done")
}

// stats names the eviction policy, and warns of one that may evict.
func TestStatsEviction(t *testing.T) {
	t.Parallel()
	f, _ := localFleet(t)
	if out := f.ok(t, "stats"); !strings.Contains(out, "maxmemory-policy noeviction") || strings.Contains(out, "WARNING") {
		t.Errorf("stats on a noeviction server:\n%s", out)
	}
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	lru := newFleet(t, srv.Client(t), "--redis", srv.URL())
	out := lru.ok(t, "stats")
	if !strings.Contains(out, "WARNING: maxmemory-policy allkeys-lru") || !strings.Contains(out, "noeviction") {
		t.Errorf("stats on an allkeys-lru server:\n%s", out)
	}
	var doc struct {
		EvictionPolicy  string `json:"eviction_policy"`
		EvictionWarning string `json:"eviction_warning"`
	}
	lru.okJSON(t, &doc, "stats")
	if doc.EvictionPolicy != "allkeys-lru" || doc.EvictionWarning == "" {
		t.Errorf("stats --json on an allkeys-lru server = %+v", doc)
	}
}
