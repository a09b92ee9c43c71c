package redistest

import (
	"testing"
	"time"
)

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
	cc := c.Client(t)
	if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
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
	rdb := s.Client(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
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
