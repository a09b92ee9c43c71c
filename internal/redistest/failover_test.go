package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// setReplicated sets key to "v" on the master at addr and waits, on the
// same connection, until a replica has it: a write the master answered
// but had not yet sent would be lost with it (asynchronous replication),
// which is not what these tests are about.
func setReplicated(ctx context.Context, t *testing.T, addr, key string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer rdb.Close()
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Do(ctx, "WAIT", 1, 10_000).Int(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 after SET %s = %d, %v; want a replica", key, n, err)
	}
}

// A replicated cluster fails over: the killed master's own replica takes
// its slots, and a ClusterClient reaches the slot through it.
func TestClusterWithReplicasFailsOver(t *testing.T) {
	t.Parallel()
	c := StartClusterWithReplicas(t)
	ctx := t.Context()
	const key = "{failover}k"
	slot, err := c.SlotOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := c.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	setReplicated(ctx, t, owner.Addr(), key)
	f := c.KillMaster(t, slot)
	promoted, at := f.WaitPromoted(t, 30*time.Second)
	if promoted == f.Old || !at.After(f.KilledAt) {
		t.Fatalf("promoted %s at %v; killed %s at %v", promoted.Addr(), at, f.Old.Addr(), f.KilledAt)
	}
	if owner, err := c.Owner(ctx, slot); err != nil || owner != promoted {
		t.Fatalf("Owner of slot %d = %v, %v; want %s", slot, owner, err, promoted.Addr())
	}
	// A fresh client learns the new map at once; the write had replicated.
	if v, err := c.Client(t).Get(ctx, key).Result(); err != nil || v != "v" {
		t.Fatalf("GET %s after the failover = %q, %v; want v", key, v, err)
	}
	t.Logf("%s promoted %v after %s was killed", promoted.Addr(), at.Sub(f.KilledAt).Round(time.Millisecond), f.Old.Addr())
}

// Three Sentinels promote a replica of a killed primary, and a failover
// client follows them.
func TestSentinelFailsOver(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	ctx := t.Context()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setReplicated(ctx, t, master.Addr(), "k")
	f := s.KillMaster(t)
	promoted, at := f.WaitPromoted(t, 30*time.Second)
	if promoted == f.Old {
		t.Fatalf("promoted the killed master %s", promoted.Addr())
	}
	if m, err := s.Master(ctx); err != nil || m != promoted {
		t.Fatalf("Master = %v, %v; want %s", m, err, promoted.Addr())
	}
	if v, err := s.Client(t).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k after the failover = %q, %v; want v", v, err)
	}
	t.Logf("%s promoted %v after %s was killed", promoted.Addr(), at.Sub(f.KilledAt).Round(time.Millisecond), f.Old.Addr())
}
