package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartClusterWithArgs is [StartCluster] with extraArgs appended to every
// node's command line, which Restart reuses. For a node whose data must
// survive Kill and Restart, pass "--appendonly", "yes", "--appendfsync",
// "always": the later flags override the defaults, and the cluster's
// nodes.conf already survives in the node's directory, so the restarted
// node comes back with its id, its slots and its keys.
func StartClusterWithArgs(t testing.TB, extraArgs ...string) *Cluster {
	t.Helper()
	bin := localBinary(t, "StartCluster")
	c := &Cluster{}
	for range slotRanges {
		c.nodes = append(c.nodes, startLocal(t, bin, true, extraArgs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	for i, n := range c.nodes {
		cl := redis.NewClient(n.clientOptions())
		r := slotRanges[i]
		err := cl.ClusterAddSlotsRange(ctx, r[0], r[1]).Err()
		if err == nil && i > 0 {
			// Every node meets the first: the same result as the first meeting all.
			err = cl.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.nodes[0].port, c.nodes[0].busPort).Err()
		}
		_ = cl.Close()
		if err != nil {
			t.Fatalf("redistest: set up cluster node %s: %v", n.Addr(), err)
		}
	}
	c.WaitReady(t)
	return c
}

// WaitReady waits until every node sees a healthy three-master cluster and
// a ClusterClient can use every slot range, e.g. after a node's Restart.
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	nodes := c.live()
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(n.clientOptions())
		defer clients[i].Close()
	}
	for {
		err := c.ready(ctx, nodes, clients)
		if err == nil && len(c.replicas) > 0 {
			err = c.replicasInSync(ctx, nodes, clients)
		}
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("redistest: cluster not ready after %v: %v\n%s", time.Since(start).Round(time.Millisecond), err, c.logTails())
		}
		time.Sleep(pollInterval)
	}
}

// NodeID returns the cluster node id of s (CLUSTER MYID).
func (s *Server) NodeID(ctx context.Context) (string, error) {
	cl := redis.NewClient(s.clientOptions())
	defer cl.Close()
	return cl.ClusterMyID(ctx).Result()
}

// SlotOf returns the hash slot of key, computed by Redis (CLUSTER KEYSLOT).
func (c *Cluster) SlotOf(ctx context.Context, key string) (int, error) {
	live := c.live()
	if len(live) == 0 {
		return 0, errors.New("no node of the cluster is running")
	}
	cl := redis.NewClient(live[0].clientOptions())
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	return int(slot), err
}

// Owner returns the master that serves slot, as the first live node sees
// it (CLUSTER SLOTS, which lists a range's master first; CLUSTER SHARDS
// of Redis 7.4 may still call a promoted replica a replica).
func (c *Cluster) Owner(ctx context.Context, slot int) (*Server, error) {
	live := c.live()
	if len(live) == 0 {
		return nil, errors.New("no node of the cluster is running")
	}
	cl := redis.NewClient(live[0].clientOptions())
	defer cl.Close()
	//lint:ignore SA1019 CLUSTER SHARDS of Redis 7.4 did not name the promoted replica master in our tests; CLUSTER SLOTS did
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	for _, r := range slots {
		if slot < r.Start || slot > r.End || len(r.Nodes) == 0 {
			continue
		}
		for _, n := range c.all() {
			if n.Addr() == r.Nodes[0].Addr {
				return n, nil
			}
		}
		return nil, fmt.Errorf("slot %d is served by %s, not one of ours", slot, r.Nodes[0].Addr)
	}
	return nil, fmt.Errorf("slot %d is not served", slot)
}

// SlotMigration moves one hash slot from one master to another in the
// steps of Redis Cluster's resharding, so that a test can run traffic
// between them: [Cluster.BeginSlotMigration], MoveKeys until it reports
// none left, then Finish. Between Begin and Finish, clients see ASK
// redirects (and TRYAGAIN for multi-key commands whose keys are split);
// after Finish, clients with a stale slot map see MOVED.
type SlotMigration struct {
	c              *Cluster
	slot           int
	from, to       *Server
	fromID, toID   string
	fromCl, toCl   *redis.Client
	migrateTimeout int // ms, MIGRATE's own timeout
}

// BeginSlotMigration marks slot IMPORTING on to and MIGRATING on from.
// The migration's clients are closed in t.Cleanup.
func (c *Cluster) BeginSlotMigration(t testing.TB, ctx context.Context, slot int, from, to *Server) (*SlotMigration, error) {
	t.Helper()
	m := &SlotMigration{c: c, slot: slot, from: from, to: to, migrateTimeout: 5000}
	m.fromCl, m.toCl = redis.NewClient(from.clientOptions()), redis.NewClient(to.clientOptions())
	t.Cleanup(func() { _ = m.fromCl.Close(); _ = m.toCl.Close() })
	var err error
	if m.fromID, err = from.NodeID(ctx); err != nil {
		return nil, err
	}
	if m.toID, err = to.NodeID(ctx); err != nil {
		return nil, err
	}
	// Importing first, as redis-cli does: otherwise an ASK from the source
	// could reach a target that refuses the slot.
	if err := m.toCl.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.fromID).Err(); err != nil {
		return nil, fmt.Errorf("SETSLOT IMPORTING on %s: %w", to.Addr(), err)
	}
	if err := m.fromCl.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.toID).Err(); err != nil {
		return nil, fmt.Errorf("SETSLOT MIGRATING on %s: %w", from.Addr(), err)
	}
	return m, nil
}

// MoveKeys migrates up to n of the slot's keys still on the source with
// one MIGRATE and returns how many it moved; 0 means none are left.
func (m *SlotMigration) MoveKeys(ctx context.Context, n int) (int, error) {
	keys, err := m.fromCl.ClusterGetKeysInSlot(ctx, m.slot, n).Result()
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	host, port, _ := strings.Cut(m.to.Addr(), ":")
	args := []any{"MIGRATE", host, port, "", 0, m.migrateTimeout, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	if err := m.fromCl.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
		return 0, fmt.Errorf("MIGRATE %d keys to %s: %w", len(keys), m.to.Addr(), err)
	}
	return len(keys), nil
}

// Finish assigns the slot to the target on every node (target first, as
// redis-cli does), ending the migration.
func (m *SlotMigration) Finish(ctx context.Context) error {
	for _, n := range append([]*Server{m.to, m.from}, m.c.others(m.to, m.from)...) {
		cl := redis.NewClient(n.clientOptions())
		err := cl.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "NODE", m.toID).Err()
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("SETSLOT %d NODE on %s: %w", m.slot, n.Addr(), err)
		}
	}
	return nil
}

// KeysLeft is how many of the slot's keys are still on the source.
func (m *SlotMigration) KeysLeft(ctx context.Context) (int64, error) {
	return m.fromCl.ClusterCountKeysInSlot(ctx, m.slot).Result()
}

func (c *Cluster) others(skip ...*Server) []*Server {
	var out []*Server
next:
	for _, n := range c.nodes {
		for _, s := range skip {
			if n == s {
				continue next
			}
		}
		out = append(out, n)
	}
	return out
}

// String names the migration for logs.
func (m *SlotMigration) String() string {
	return "slot " + strconv.Itoa(m.slot) + " " + m.from.Addr() + " → " + m.to.Addr()
}
