package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartSetGet(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q", s.Addr())
	}
	if want := "redis://" + s.Addr() + "/0"; s.URL() != want {
		t.Fatalf("URL = %q, want %q", s.URL(), want)
	}
	ctx := t.Context()
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k = %q, %v; want v", v, err)
	}
	// URL must be usable by code that configures itself from a URL.
	opts, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	c2 := redis.NewClient(opts)
	defer c2.Close()
	if v, err := c2.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k via URL = %q, %v; want v", v, err)
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()

	s.Kill()
	start := time.Now()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Kill succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("PING after Kill took %v; short timeouts/no retries expected", d)
	}

	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Addr after Restart = %q, want %q", s.Addr(), addr)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after Restart: err = %v, want redis.Nil (no persistence)", err)
	}
	// Restart twice in a row must work too (old process reaped, port reusable).
	s.Restart()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after second Restart: %v", err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	ping := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := c.Ping(ctx).Err()
		return time.Since(start), err
	}

	s.Pause()
	d, err := ping()
	if err == nil {
		t.Fatal("PING while paused succeeded")
	}
	if d > 900*time.Millisecond {
		t.Errorf("PING while paused took %v; ctx deadline (200ms) should cut it short", d)
	}

	s.Resume()
	if _, err := ping(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
	// Pause is left in effect here on purpose: Cleanup must still stop the process.
	s.Pause()
}

func TestCommandCalls(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	ctx := t.Context()
	if n := s.CommandCalls(t, "incr"); n != 0 {
		t.Fatalf("incr calls before = %d, want 0", n)
	}
	for range 3 {
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.CommandCalls(t, "incr"); n != 3 {
		t.Fatalf("incr calls = %d, want 3", n)
	}
	if n := s.CommandCalls(t, "INCR"); n != 3 {
		t.Fatalf("INCR calls = %d, want 3 (case-insensitive)", n)
	}
	if n := s.CommandCalls(t, "evalsha"); n != 0 {
		t.Fatalf("evalsha calls = %d, want 0", n)
	}
}

func TestExtraArgs(t *testing.T) {
	t.Parallel()
	s := Start(t, "--maxmemory", "7mb")
	cfg, err := s.Client(t).ConfigGet(t.Context(), "maxmemory").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg["maxmemory"]; got != fmt.Sprint(7<<20) {
		t.Fatalf("maxmemory = %q, want %d", got, 7<<20)
	}
	// No persistence configured.
	cfg, err = s.Client(t).ConfigGet(t.Context(), "save").Result()
	if err != nil || cfg["save"] != "" {
		t.Fatalf("save = %q, %v; want empty", cfg["save"], err)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cl := StartCluster(t)
	t.Logf("cluster ready in %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()

	if got := len(cl.Addrs()); got != 3 {
		t.Fatalf("len(Addrs) = %d, want 3", got)
	}
	cc := cl.Client(t)
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET key:%d: %v", i, err)
		}
	}
	for i := range 100 {
		v, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		if err != nil || v != i {
			t.Fatalf("GET key:%d = %d, %v", i, v, err)
		}
	}

	for i, n := range cl.Nodes() {
		c := n.Client(t)
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_known_nodes:3"} {
			if !strings.Contains(info, want) {
				t.Errorf("node %d CLUSTER INFO lacks %s:\n%s", i, want, info)
			}
		}
		// The 100 keys must be spread over all masters, not land on one.
		if size, err := c.DBSize(ctx).Result(); err != nil || size == 0 {
			t.Errorf("node %d DBSIZE = %d, %v; want > 0", i, size, err)
		}
	}

	// The readiness probe keys must cover all three slot ranges.
	c0 := cl.Nodes()[0].Client(t)
	for i, k := range probeKeys {
		slot, err := c0.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if r := slotRanges[i]; slot < int64(r[0]) || slot > int64(r[1]) {
			t.Errorf("probe key %q slot %d not in %v", k, slot, r)
		}
	}
}
