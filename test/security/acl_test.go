package security_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// aclUser is the ACL SETUSER line of doc.go and docs/redis.md, without the
// password; TestACLDocsMatch keeps the three in step.
const aclUser = "ACL SETUSER worksteal on resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all " +
	"+evalsha +eval +blmove " +
	"+time +get +exists +pexpire +pttl +incr " +
	"+hget +hmget +hset +hdel +hexists +hgetall +hkeys " +
	"+lpush +rpush +lindex +llen +lrange +ltrim " +
	"+sadd +srem +smembers " +
	"+zadd +zrem +zcard +zcount +zscore +zmscore +zrange +zrangebyscore +zremrangebyscore " +
	"+info +command +cluster|slots +asking"

// sentByClients are the granted commands that no script calls: the
// scripts themselves, Queue.Wait's blocking pop, the recruiter's reading
// of the eviction policy (INFO memory), and
// what a redis.ClusterClient sends to learn the command table and the
// slots and to follow ASK redirects.
var sentByClients = []string{"evalsha", "eval", "blmove", "info", "command", "cluster|slots", "asking"}

// aclOptions are the documented client options for the ACL user, beyond
// its address and timeouts: without DisableIdentity, go-redis sends CLIENT
// SETINFO on every connection, which Redis 7.2+ and Valkey refuse to
// aclUser and record in ACL LOG. TestACLDocsMatch checks the docs say so.
func aclOptions(o *redis.Options) *redis.Options {
	o.Username, o.Password = "worksteal", "s3cret"
	o.DisableIdentity = true
	return o
}

// createACLUser runs aclUser with the password of aclOptions on srv and
// empties ACL LOG; it returns an admin client of srv.
func createACLUser(t *testing.T, ctx context.Context, srv *redistest.Server) *redis.Client {
	t.Helper()
	admin := srv.Client(t)
	args := []any{}
	for f := range strings.FieldsSeq(aclUser) {
		args = append(args, f)
	}
	args = append(args, ">s3cret")
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%s: %v", aclUser, err)
	}
	if err := admin.ACLLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return admin
}

// allowed returns the commands aclUser grants.
func allowed() []string {
	var cmds []string
	for f := range strings.FieldsSeq(aclUser) {
		if c, ok := strings.CutPrefix(f, "+"); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// Every command that a script of worksteal calls is granted: the ACL
// cannot fall behind a script that learns a new command.
func TestACLCoversEveryScript(t *testing.T) {
	t.Parallel()
	call := regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)
	used := map[string][]string{}
	for _, dir := range []string{"internal/qstore", "internal/joblock", "jobs", "exphash", "recruiter"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.lua"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Lua scripts in %s: %v", dir, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(src), -1) {
				c := strings.ToLower(m[1])
				used[c] = append(used[c], filepath.Join(dir, filepath.Base(f)))
			}
		}
	}
	grant := allowed()
	for c, where := range used {
		if !slices.Contains(grant, c) {
			t.Errorf("%s is called by %v but not granted: add +%s to docs/redis.md, doc.go and aclUser", c, slices.Compact(where), c)
		}
	}
	for _, c := range grant {
		if _, ok := used[c]; !ok && !slices.Contains(sentByClients, c) {
			t.Errorf("+%s is granted but no script calls it: remove it", c)
		}
	}
}

// A recruiter with Drain, TidyStale, PromoteDue and EvictExpired, its
// queue (enqueue, claim, Value, Result, Wait) and its expiring hash all
// work as an ACL user holding only aclUser's permissions: ACL LOG stays
// empty. Keys outside the user's patterns and commands outside its list
// are refused.
func TestLeastPrivilegeACLUser(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testrig.Context(t, 60*time.Second)
	admin := createACLUser(t, ctx, srv)
	rdb := redis.NewClient(aclOptions(srv.Options()))
	t.Cleanup(func() { _ = rdb.Close() })
	aclLog := func() []string {
		entries, err := admin.Do(ctx, "ACL", "LOG").Slice()
		if err != nil {
			t.Fatalf("ACL LOG: %v", err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}

	before := srv.CommandStats(t)
	a := startApp(t, rdb, appConfig{prefix: "worksteal", queue: "mail", hashKey: "worksteal:sessions", items: 300})
	// A client waits for an item's result: Wait blocks in BLMOVE.
	waited := make(chan error, 1)
	go func() {
		got, err := a.q.Wait(ctx, a.ids[len(a.ids)-1])
		if err == nil && !strings.HasPrefix(string(got), "done:") {
			err = fmt.Errorf("result %q", got)
		}
		waited <- err
	}()
	testrig.Eventually(t, 30*time.Second, "the app's jobs done under the ACL user", func() bool { return a.done(ctx, "") },
		func() string { return a.describe() + "ACL LOG:\n" + strings.Join(aclLog(), "\n") })
	if err := <-waited; err != nil {
		t.Fatalf("Wait under the ACL user: %v", err)
	}
	a.shutdown(t)
	a.checkResults(t, ctx)
	enqueueWithOptions(t, ctx, rdb)
	joinChildren(t, ctx, rdb)
	limitsAndPriorities(t, ctx, rdb)
	if log := aclLog(); len(log) != 0 {
		t.Fatalf("ACL LOG after the run has %d entries, want none:\n%s", len(log), strings.Join(log, "\n"))
	}
	// Every command the run sent, counted by Redis itself (commands inside
	// scripts included), is in the grant, and the grant has nothing the
	// scripts and clients do not send (TestACLCoversEveryScript).
	sent := srv.CommandStats(t)
	notOurs := []string{"info", "hello", "client|setinfo", "acl|log"} // the readings' and the admin's own
	for cmd, calls := range sent {
		if calls > before[cmd] && !slices.Contains(allowed(), cmd) && !slices.Contains(notOurs, cmd) {
			t.Errorf("the run sent %s %d times, and the grant does not name it", cmd, calls-before[cmd])
		}
	}
	for _, cmd := range []string{"hmget", "evalsha", "blmove"} { // the lock, every script, Wait
		if sent[cmd] <= before[cmd] {
			t.Errorf("the run sent no %s: the check above saw too little of it", cmd)
		}
	}

	refused := []struct {
		what string
		run  func(context.Context) error
	}{
		{"SET of a key outside the patterns", func(ctx context.Context) error { return rdb.Set(ctx, "other:key", "x", 0).Err() }},
		{"a script touching a key outside the patterns", func(ctx context.Context) error {
			return rdb.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{"other:key"}).Err()
		}},
		{"a script touching an undeclared key", func(ctx context.Context) error {
			return rdb.Eval(ctx, "return redis.call('SET', 'other:key', 'x')", nil).Err()
		}},
		{"a command outside the list on an allowed key", func(ctx context.Context) error {
			return rdb.Append(ctx, "worksteal:lock:x", "x").Err()
		}},
		{"KEYS", func(ctx context.Context) error { return rdb.Keys(ctx, "*").Err() }},
		{"FLUSHALL", func(ctx context.Context) error { return rdb.FlushAll(ctx).Err() }},
		{"CONFIG GET", func(ctx context.Context) error { return rdb.ConfigGet(ctx, "*").Err() }},
	}
	for _, r := range refused {
		if err := r.run(ctx); !isPermissionError(err) {
			t.Errorf("%s: err = %v, want a permission error", r.what, err)
		}
	}
	if n, err := admin.Exists(ctx, "other:key").Result(); err != nil || n != 0 {
		t.Errorf("other:key exists = %d, %v; want 0", n, err)
	}
	entries, err := admin.ACLLog(ctx, 100).Result()
	if err != nil {
		t.Fatal(err)
	}
	var logged int64
	for _, e := range entries {
		logged += e.Count
	}
	if logged != int64(len(refused)) {
		t.Errorf("ACL LOG counts %d denials after %d refusals:\n%s", logged, len(refused), strings.Join(aclLog(), "\n"))
	}
}

// Why aclOptions sets DisableIdentity: with go-redis's defaults, every
// connection of the ACL user sends CLIENT SETINFO, which Redis 7.2+ and
// Valkey refuse to aclUser and log; with aclOptions, connecting (HELLO 3
// with AUTH, which needs no grant) logs nothing. Redis 7.0 does not know
// CLIENT SETINFO, refuses it as unknown before any ACL check, and its ACL
// SETUSER refuses +client|setinfo, so the grant cannot name it.
func TestACLUserClientIdentity(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testrig.Context(t, 30*time.Second)
	admin := createACLUser(t, ctx, srv)
	info, err := admin.Do(ctx, "COMMAND", "INFO", "client|setinfo").Slice()
	if err != nil {
		t.Fatal(err)
	}
	knowsSetinfo := len(info) == 1 && info[0] != nil
	if !knowsSetinfo {
		t.Logf("the server does not know CLIENT SETINFO (Redis before 7.2): go-redis's defaults leave ACL LOG empty here too")
	}
	for _, tc := range []struct {
		name       string
		options    func(*redis.Options) *redis.Options
		wantDenied bool
	}{
		{"README options", aclOptions, false},
		{"go-redis defaults", func(o *redis.Options) *redis.Options {
			o = aclOptions(o)
			o.DisableIdentity = false
			return o
		}, knowsSetinfo},
	} {
		if err := admin.ACLLogReset(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(tc.options(srv.Options()))
		err := rdb.HSet(ctx, "worksteal:identity", "name", tc.name).Err()
		_ = rdb.Close()
		if err != nil {
			t.Fatalf("%s: HSET as the ACL user: %v", tc.name, err)
		}
		entries, err := admin.ACLLog(ctx, 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		var denied, other []string
		for _, e := range entries {
			line := fmt.Sprintf("%s %s %s (%d)", e.Username, e.Reason, e.Object, e.Count)
			if e.Reason == "command" && e.Object == "client|setinfo" {
				denied = append(denied, line)
			} else {
				other = append(other, line)
			}
		}
		if len(other) != 0 || (len(denied) != 0) != tc.wantDenied {
			t.Errorf("%s: ACL LOG has CLIENT SETINFO denials %q and other entries %q; want no other entries, and denials: %v",
				tc.name, denied, other, tc.wantDenied)
		}
	}
}

// isPermissionError reports whether err is an ACL refusal. The words
// differ by server and version: Redis 7.0 says a script "can't access at
// least one of the keys", Redis 7.4 and Valkey 8.0 "No permissions to
// access a key", and commands are refused with NOPERM.
func isPermissionError(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, sign := range []string{"noperm", "no permissions", "can't run this command", "can't access"} {
		if strings.Contains(msg, sign) {
			return true
		}
	}
	return false
}

// The README and doc.go show the same ACL SETUSER line as aclUser, and
// tell to set DisableIdentity as aclOptions does.
func TestACLDocsMatch(t *testing.T) {
	t.Parallel()
	want := strings.Fields(aclUser)
	for _, file := range []string{"../../docs/redis.md", "doc.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		in := false
		for line := range strings.Lines(string(src)) {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "//"))
			if strings.HasPrefix(line, "ACL SETUSER") {
				in = true
			} else if in && !strings.HasPrefix(line, "+") {
				break
			}
			if in {
				for f := range strings.FieldsSeq(line) {
					if !strings.HasPrefix(f, ">") { // the password
						got = append(got, f)
					}
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s shows\n%s\nwant\n%s", file, strings.Join(got, " "), aclUser)
		}
		if !strings.Contains(string(src), "DisableIdentity: true") {
			t.Errorf("%s does not show the client option DisableIdentity: true of aclOptions", file)
		}
	}
}

// enqueueWithOptions runs EnqueueWith's script and the per-item limits of
// Settle, Tidy and PurgeDead as rdb's user: a delayed, limited, unique
// item and its duplicate, and a limited item nacked to the dead letters
// and purged.
func enqueueWithOptions(t *testing.T, ctx context.Context, rdb redis.UniversalClient) {
	t.Helper()
	q, err := queue.New(rdb, "options", queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts := queue.EnqueueOptions{Delay: time.Hour, MaxAttempts: 2, Unique: "u", UniqueFor: time.Minute}
	id, dup, err := q.EnqueueWith(ctx, []byte("x"), opts)
	if err != nil || dup {
		t.Fatalf("EnqueueWith = %s, %v, %v", id, dup, err)
	}
	if again, dup, err := q.EnqueueWith(ctx, []byte("x"), opts); again != id || !dup || err != nil {
		t.Fatalf("EnqueueWith again = %s, %v, %v; want %s, a duplicate", again, dup, err, id)
	}
	if _, _, err := q.EnqueueWith(ctx, []byte("y"), queue.EnqueueOptions{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, 1)
	if err != nil || len(items) != 1 {
		t.Fatalf("Claim = %v, %v", items, err)
	}
	if s, err := q.Settle(ctx, queue.Settlement{Item: items[0], Err: errors.New("no")}); s.Dead != 1 || err != nil {
		t.Fatalf("Settle = %+v, %v; want dead at its own last attempt", s, err)
	}
	if _, err := qstore.Of(q).Tidy(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := qstore.Of(q).PurgeDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("PurgeDead = %d, %v", n, err)
	}
}

// joinChildren runs a join's scripts (a tasks fan-out's, in the queue's
// storage) as rdb's user: EnqueueJoin, Wait of the join, a child nacked to
// the dead letters, requeued and acked, the final item enqueued by that
// ack, Join and JoinResults; then EnqueueJoin with options, and its
// duplicate.
func joinChildren(t *testing.T, ctx context.Context, rdb redis.UniversalClient) {
	t.Helper()
	q, err := queue.New(rdb, "joins", queue.Config{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := qstore.Of(q)
	id, _, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: [][]byte{[]byte("a"), []byte("b")}, Final: []byte("f")})
	if err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, 2)
	if err != nil || len(items) != 2 {
		t.Fatalf("Claim = %v, %v", items, err)
	}
	if s, err := q.Settle(ctx, queue.Settlement{Item: items[0], Result: []byte("r")},
		queue.Settlement{Item: items[1], Err: errors.New("no")}); s.Acked != 1 || s.Dead != 1 || err != nil {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	if _, err := q.Wait(ctx, id); !errors.Is(err, queue.ErrDead) {
		t.Fatalf("Wait of the join = %v, want ErrDead", err)
	}
	if n, err := qstore.Of(q).RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	for range 2 { // the child, then the final item its ack enqueued
		items, err := q.Claim(ctx, 1)
		if err != nil || len(items) != 1 {
			t.Fatalf("Claim = %v, %v", items, err)
		}
		if err := q.Ack(ctx, items[0], []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	if j, err := st.Join(ctx, id); j.State != qstore.JoinDone || err != nil {
		t.Fatalf("Join = %+v, %v", j, err)
	}
	if r, err := st.JoinResults(ctx, id); len(r) != 2 || err != nil {
		t.Fatalf("JoinResults = %q, %v", r, err)
	}
	// A join with every option (delayed children, limits, a unique key's
	// lock), then its duplicate.
	opts := qstore.EnqueueOptions{Delay: time.Minute, MaxAttempts: 3, Unique: "join", UniqueFor: time.Minute}
	first, dup, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: [][]byte{[]byte("a")}, Final: []byte("f"), Options: opts})
	if err != nil || dup {
		t.Fatalf("EnqueueJoin with options = %s, %v, %v", first, dup, err)
	}
	if again, dup, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: [][]byte{[]byte("b")}, Final: []byte("f"), Options: opts}); again != first || !dup || err != nil {
		t.Fatalf("EnqueueJoin under the held key = %s, %v, %v; want %s, a duplicate", again, dup, err, first)
	}
}

// limitsAndPriorities runs the scripts of task types' limits and of
// priorities as rdb's user: a limited type's claim, setting aside,
// extend, release and settle; lanes by weight.
func limitsAndPriorities(t *testing.T, ctx context.Context, rdb redis.UniversalClient) {
	t.Helper()
	q, err := queue.New(rdb, "limits", queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := qstore.Of(q)
	if err := st.SetTypeLimit(ctx, "slow", qstore.TypeLimit{Running: 1, Rate: 10, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetPriorities(ctx, map[string]int{"high": 3}); err != nil {
		t.Fatal(err)
	}
	slow := append([]byte{1, 4}, "slow\x04json{}"...)
	if _, err := st.EnqueueBatchWith(ctx, [][]byte{slow, slow}, qstore.EnqueueOptions{Priority: "high"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []byte("plain")); err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, 10)
	if err != nil || len(items) != 2 {
		t.Fatalf("Claim = %d items, %v; want a slow one and the plain one", len(items), err)
	}
	if _, err := q.Extend(ctx, items[0], time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Release(ctx, items[0]); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	if d, err := q.Depth(ctx); err != nil || d.Parked != 2 {
		t.Fatalf("Depth = %+v, %v; want both slow items set aside", d, err)
	}
	again, err := q.Claim(ctx, 10)
	if err != nil || len(again) != 1 {
		t.Fatalf("Claim = %d items, %v; want one slow item", len(again), err)
	}
	if _, err := q.Settle(ctx, queue.Settlement{Item: again[0]}, queue.Settlement{Item: items[1]}); err != nil {
		t.Fatal(err)
	}
}
