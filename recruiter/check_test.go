package recruiter_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// closedAddr is an address where nothing listens: a port just released.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// recruiterCommands is what the recruiter sends, itself and in its
// scripts (lock_*.lua, pause.lua), and INFO for the eviction policy.
const recruiterCommands = "+evalsha +eval +time +get +pexpire +pttl +hget +hmget +hset +hdel +info"

// aclClient makes an ACL user on srv with the given commands, on the keys
// of the default prefix, and returns a client of it.
func aclClient(t *testing.T, srv *redistest.Server, commands string) *redis.Client {
	t.Helper()
	args := []any{"ACL", "SETUSER", "checked", "on", ">pw", "resetkeys", "~worksteal:*", "~{worksteal:*", "resetchannels", "-@all"}
	for f := range strings.FieldsSeq(commands) {
		args = append(args, f)
	}
	if err := srv.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	o := srv.Options()
	o.Username, o.Password, o.DisableIdentity = "checked", "pw", true
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestCheckRefusedDial: against a closed port, Check's error wraps
// ErrRedisUnreachable and names the address and the refused dial, well
// within RedisTimeout (the dial is refused at once: the bound is the
// contract, not the expected time).
func TestCheckRefusedDial(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	const timeout = 2 * time.Second
	rec := newRecruiter(t, rdb, recruiter.Config{RedisTimeout: timeout}, nil)
	began := time.Now()
	err := rec.Check(context.Background())
	took := time.Since(began)
	if !errors.Is(err, recruiter.ErrRedisUnreachable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Check = %v, want ErrRedisUnreachable naming %s and the refused connection", err, addr)
	}
	if took >= timeout {
		t.Fatalf("Check took %v, want under RedisTimeout %v", took, timeout)
	}
	t.Logf("%v in %v", err, took)
}

// TestCheckWrongPassword: refused credentials are named, as unreachable.
func TestCheckWrongPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	aclClient(t, srv, recruiterCommands)
	o := srv.Options()
	o.Username, o.Password, o.DisableIdentity = "checked", "wrong", true
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	rec := newRecruiter(t, rdb, recruiter.Config{}, nil)
	err := rec.Check(context.Background())
	t.Log(err)
	if !errors.Is(err, recruiter.ErrRedisUnreachable) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("Check = %v, want ErrRedisUnreachable naming WRONGPASS", err)
	}
}

// TestCheckUnansweredWithinTimeout: a server that accepts the dial but
// never answers (paused) makes Check return within RedisTimeout plus a
// margin for a loaded machine, naming the timeout.
func TestCheckUnansweredWithinTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const timeout = 500 * time.Millisecond
	rec := newRecruiter(t, rdb, recruiter.Config{RedisTimeout: timeout}, nil)
	srv.Pause()
	defer srv.Resume()
	began := time.Now()
	err := rec.Check(context.Background())
	took := time.Since(began)
	srv.Resume()
	if !errors.Is(err, recruiter.ErrRedisUnreachable) || !strings.Contains(err.Error(), "RedisTimeout") {
		t.Fatalf("Check = %v, want ErrRedisUnreachable naming RedisTimeout", err)
	}
	if took > timeout+time.Second {
		t.Fatalf("Check took %v, want about RedisTimeout %v", took, timeout)
	}
}

// TestCheckACLMissingCommand: an ACL user without HDEL gets an error
// wrapping ErrRedisDenied that names the command and the scripts that
// call it; with every command the recruiter sends, nil (the probe does
// not cry wolf). Nothing is written.
func TestCheckACLMissingCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()

	full := aclClient(t, srv, recruiterCommands)
	rec := newRecruiter(t, full, recruiter.Config{Prefix: "worksteal"}, nil)
	mustRegister(t, rec, recruiter.Func("tidy", noop), recruiter.JobConfig{Every: time.Hour})
	if err := rec.Check(ctx); err != nil {
		t.Fatalf("Check with the recruiter's grant = %v, want nil", err)
	}

	lacking := aclClient(t, srv, strings.Replace(recruiterCommands, " +hdel", "", 1))
	rec = newRecruiter(t, lacking, recruiter.Config{Prefix: "worksteal"}, nil)
	err := rec.Check(ctx)
	t.Log(err)
	if !errors.Is(err, recruiter.ErrRedisDenied) {
		t.Fatalf("Check without +hdel = %v, want ErrRedisDenied", err)
	}
	for _, want := range []string{"hdel", "lock_release.lua", "docs/redis.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v, want it to name %q", err, want)
		}
	}
	if errors.Is(err, recruiter.ErrRedisUnreachable) || errors.Is(err, recruiter.ErrRedisEvicts) {
		t.Errorf("Check = %v: only the denial was wrong", err)
	}

	noEval := aclClient(t, srv, strings.Replace(recruiterCommands, "+evalsha +eval ", "", 1))
	rec = newRecruiter(t, noEval, recruiter.Config{Prefix: "worksteal"}, nil)
	err = rec.Check(ctx)
	t.Log(err)
	if !errors.Is(err, recruiter.ErrRedisDenied) || !strings.Contains(err.Error(), "evalsha") {
		t.Fatalf("Check without +evalsha +eval = %v, want ErrRedisDenied naming evalsha", err)
	}
	if n := srv.Client(t).DBSize(ctx).Val(); n != 0 {
		t.Errorf("Check left %d keys, want none", n)
	}
}

// TestCheckEvictingPolicy: allkeys-lru is named, with ErrRedisEvicts;
// noeviction passes.
func TestCheckEvictingPolicy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	rec := newRecruiter(t, srv.Client(t), recruiter.Config{}, nil)
	err := rec.Check(context.Background())
	t.Log(err)
	if !errors.Is(err, recruiter.ErrRedisEvicts) || !strings.Contains(err.Error(), "allkeys-lru") {
		t.Fatalf("Check = %v, want ErrRedisEvicts naming allkeys-lru", err)
	}
	if errors.Is(err, recruiter.ErrRedisDenied) || errors.Is(err, recruiter.ErrRedisUnreachable) {
		t.Errorf("Check = %v: only the policy was wrong", err)
	}
}

// TestCheckHealthy: a plain Redis passes.
func TestCheckHealthy(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	if err := b.rec.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v, want nil", err)
	}
}

// TestCheckClusterMasters: on a Cluster, every master is asked; a healthy
// one passes.
func TestCheckClusterMasters(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	rec := newRecruiter(t, rdb, recruiter.Config{RedisTimeout: 2 * time.Second}, nil)
	if err := rec.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v, want nil", err)
	}
}

// TestWarnNamesRefusedDial: the recruiter's first warning against a closed
// port names the refused dial, not only the deadline that go-redis's
// retries end on.
func TestWarnNamesRefusedDial(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	logs := &logBuffer{}
	rec := newRecruiter(t, rdb, recruiter.Config{}, logs)
	mustRegister(t, rec, recruiter.Func("tidy", noop), recruiter.JobConfig{Every: 100 * time.Millisecond})
	testrig.Eventually(t, 20*time.Second, "a warning", func() bool { return logs.count("level=WARN") > 0 }, logs.String)
	first, _, _ := strings.Cut(logs.String()[strings.Index(logs.String(), "level=WARN"):], "\n")
	t.Log(first)
	if !strings.Contains(first, "connection refused") || !strings.Contains(first, addr) {
		t.Fatalf("first warning %q, want it to name the refused dial to %s", first, addr)
	}
}

// workerGrant is docs/redis.md's grant of a worker, its commands only.
const workerGrant = "+evalsha +eval +blmove +time +get +exists +pexpire +pttl +incr +hget +hmget +hset +hdel +hexists +hgetall +hkeys +lpush +rpush +lindex +llen +lrange +ltrim +sadd +srem +smembers +zadd +zrem +zcard +zcount +zscore +zmscore +zrange +zrangebyscore +zremrangebyscore +info +command +cluster|slots +asking"

// TestCheckACLOfQueueScripts: the queues that registered jobs work are
// checked too: a worker's documented grant passes; without +ltrim, which
// only the queue's scripts call, Check names it, the scripts and the job.
func TestCheckACLOfQueueScripts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, c := range []struct {
		grant string
		want  []string // nil: Check passes
	}{
		{workerGrant, nil},
		{strings.Replace(workerGrant, " +ltrim", "", 1), []string{"ltrim", "claim.lua", "job drain-mail", "{worksteal:q:mail}"}},
	} {
		rdb := aclClient(t, srv, c.grant)
		q, err := queue.New(rdb, "mail", queue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		drain, err := jobs.Drain(q, func(context.Context, queue.Item) ([]byte, error) { return nil, nil }, jobs.DrainConfig{Batching: jobs.Batching{Name: "drain-mail"}})
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecruiter(t, rdb, recruiter.Config{Prefix: "worksteal"}, nil)
		mustRegister(t, rec, drain, recruiter.JobConfig{Every: time.Hour})
		err = rec.Check(ctx)
		if c.want == nil {
			if err != nil {
				t.Errorf("Check with the worker's grant = %v, want nil", err)
			}
			continue
		}
		if !errors.Is(err, recruiter.ErrRedisDenied) {
			t.Fatalf("Check without +ltrim = %v, want ErrRedisDenied", err)
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check = %v, want it to name %q", err, want)
			}
		}
	}
	if n := srv.Client(t).DBSize(ctx).Val(); n != 0 {
		t.Errorf("Check left %d keys, want none", n)
	}
}
