package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// failoverNodeTimeout is the cluster-node-timeout, in ms, of a cluster
// with replicas: a master silent this long is marked failed, and its
// replica elected in its place within about a second more.
const failoverNodeTimeout = 1000

// StartClusterWithReplicas starts three masters, each with one replica,
// with cluster-node-timeout 1000 ms, so that a killed master's replica is
// promoted within a few seconds ([Cluster.KillMaster]). extraArgs are
// appended to every node's command line, as for [StartClusterWithArgs].
func StartClusterWithReplicas(t testing.TB, extraArgs ...string) *Cluster {
	t.Helper()
	bin := localBinary(t, "StartClusterWithReplicas")
	args := append([]string{"--cluster-node-timeout", strconv.Itoa(failoverNodeTimeout)}, extraArgs...)
	c := &Cluster{}
	for range slotRanges {
		c.nodes = append(c.nodes, startLocal(t, bin, true, args))
	}
	for range slotRanges {
		c.replicas = append(c.replicas, startLocal(t, bin, true, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	all := c.all()
	clients := make([]*redis.Client, len(all))
	for i, n := range all {
		clients[i] = redis.NewClient(n.clientOptions())
		defer clients[i].Close()
	}
	ids := make([]string, len(c.nodes))
	for i := range c.nodes {
		r := slotRanges[i]
		err := clients[i].ClusterAddSlotsRange(ctx, r[0], r[1]).Err()
		if err == nil {
			ids[i], err = clients[i].ClusterMyID(ctx).Result()
		}
		if err != nil {
			t.Fatalf("redistest: set up cluster master %s: %v", all[i].Addr(), err)
		}
	}
	for i, cl := range clients[1:] {
		if err := cl.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", all[0].port, all[0].busPort).Err(); err != nil {
			t.Fatalf("redistest: cluster node %s meets %s: %v", all[i+1].Addr(), all[0].Addr(), err)
		}
	}
	// A replica can follow its master only once gossip has told it of it.
	for i, r := range c.replicas {
		cl := clients[len(c.nodes)+i]
		for {
			err := cl.ClusterReplicate(ctx, ids[i]).Err()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("redistest: %s replicates %s: %v\n%s", r.Addr(), c.nodes[i].Addr(), err, c.logTails())
			}
			time.Sleep(pollInterval)
		}
	}
	c.WaitReady(t)
	return c
}

// replicasInSync checks that every live replica's link to its master is
// up and its first sync done, and that the nodes count as many healthy
// replicas as run.
func (c *Cluster) replicasInSync(ctx context.Context, nodes []*Server, clients []*redis.Client) error {
	replicas := 0
	for i, cl := range clients {
		info, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("INFO replication on %s: %w", nodes[i].Addr(), err)
		}
		if !strings.Contains(info, "role:slave\r\n") {
			continue
		}
		replicas++
		if !strings.Contains(info, "master_link_status:up\r\n") || !strings.Contains(info, "master_sync_in_progress:0\r\n") {
			return fmt.Errorf("replica %s is not in sync with its master", nodes[i].Addr())
		}
	}
	if want := len(nodes) - len(slotRanges); replicas != want {
		return fmt.Errorf("%d of the %d live nodes are replicas, want %d", replicas, len(nodes), want)
	}
	return nil
}

// KillMaster SIGKILLs the master that serves slot and returns the
// failover under way, to wait for its replica's promotion.
func (c *Cluster) KillMaster(t testing.TB, slot int) *Failover {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	old, err := c.Owner(ctx, slot)
	if err != nil {
		t.Fatalf("redistest: KillMaster: %v", err)
	}
	f := &Failover{Old: old, replicas: replicasOf(ctx, t, old, c.live()), routed: func(ctx context.Context, promoted *Server) error {
		return c.routes(ctx, slot, promoted)
	}, logs: c.logTails}
	if len(f.replicas) == 0 {
		t.Fatalf("redistest: KillMaster: the master of slot %d, %s, has no replica\n%s", slot, old.Addr(), c.logTails())
	}
	old.Kill()
	f.KilledAt = time.Now()
	return f
}

// routes checks that every live node sees the cluster whole and serves
// slot from promoted (CLUSTER SLOTS, which lists a range's master first).
func (c *Cluster) routes(ctx context.Context, slot int, promoted *Server) error {
	for _, n := range c.live() {
		cl := redis.NewClient(n.clientOptions())
		info, err := cl.ClusterInfo(ctx).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			//lint:ignore SA1019 as in Owner: CLUSTER SLOTS names the promoted replica master on every server
			slots, err = cl.ClusterSlots(ctx).Result()
		}
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return fmt.Errorf("%s: cluster_state is not ok", n.Addr())
		}
		served := ""
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End && len(s.Nodes) > 0 {
				served = s.Nodes[0].Addr
			}
		}
		if served != promoted.Addr() {
			return fmt.Errorf("%s serves slot %d from %q, not from %s", n.Addr(), slot, served, promoted.Addr())
		}
	}
	return nil
}
