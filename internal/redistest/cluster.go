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

const clusterTimeout = 20 * time.Second

// slotRanges splits the 16384 hash slots over the three masters.
var slotRanges = [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

// probeKeys hash to one slot range each ("hello"=866, "test"=6918,
// "foo"=12182), so the readiness probe touches every master.
var probeKeys = []string{"hello", "test", "foo"}

// Cluster is a three-master Redis Cluster, without replicas
// ([StartCluster]) or with one per master ([StartClusterWithReplicas]).
type Cluster struct {
	nodes    []*Server // the masters as started
	replicas []*Server // replicas[i] replicated nodes[i] when started
}

// all is every node started, masters first, dead or alive.
func (c *Cluster) all() []*Server { return append(c.Nodes(), c.replicas...) }

// live is every node whose process runs.
func (c *Cluster) live() []*Server {
	var out []*Server
	for _, n := range c.all() {
		if n.running() {
			out = append(out, n)
		}
	}
	return out
}

// StartCluster starts three cluster-enabled redis-servers, assigns the slots,
// joins them and waits until a ClusterClient can use every slot range.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return StartClusterWithArgs(t)
}

// ready checks every node's own view first (cheap), then end-to-end access.
// clients are those of nodes, in order: every node dead or alive must be
// known, and every live one must see the cluster whole.
func (c *Cluster) ready(ctx context.Context, nodes []*Server, clients []*redis.Client) error {
	known := "cluster_known_nodes:" + strconv.Itoa(len(c.all()))
	for i, cl := range clients {
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", nodes[i].Addr(), err)
		}
		for _, want := range []string{"cluster_state:ok", known, "cluster_size:3"} {
			if !strings.Contains(info, want+"\r\n") {
				return fmt.Errorf("%s: CLUSTER INFO lacks %s", nodes[i].Addr(), want)
			}
		}
		list, err := cl.ClusterNodes(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER NODES on %s: %w", nodes[i].Addr(), err)
		}
		if m := countHealthyMasters(list); m != 3 {
			return fmt.Errorf("%s knows %d healthy masters, want 3", nodes[i].Addr(), m)
		}
	}
	cc := redis.NewClusterClient(c.clientOptions())
	defer cc.Close()
	for _, k := range probeKeys {
		key := "redistest:probe:{" + k + "}"
		if err := cc.Set(ctx, key, k, 0).Err(); err != nil {
			return fmt.Errorf("SET %s: %w", key, err)
		}
		if v, err := cc.Get(ctx, key).Result(); err != nil || v != k {
			return errors.Join(fmt.Errorf("GET %s = %q, want %q", key, v, k), err)
		}
		if err := cc.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("DEL %s: %w", key, err)
		}
	}
	return nil
}

func countHealthyMasters(clusterNodes string) int {
	n := 0
	for line := range strings.Lines(clusterNodes) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		flags := f[2]
		if strings.Contains(flags, "master") && !strings.Contains(flags, "fail") &&
			!strings.Contains(flags, "handshake") && !strings.Contains(flags, "noaddr") {
			n++
		}
	}
	return n
}

// Addrs returns the "127.0.0.1:port" address of every master as started
// (with replicas, the seed addresses a ClusterClient needs).
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the masters as started, e.g. to Kill or Pause one of them.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

func (c *Cluster) clientOptions() *redis.ClusterOptions {
	// Same short timeouts as Server.Client; ClusterClient already disables
	// per-node retries by default and follows MOVED/ASK via MaxRedirects.
	return &redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		DialTimeout:           dialTimeout,
		DialerRetries:         1,
		ReadTimeout:           ioTimeout,
		WriteTimeout:          ioTimeout,
		ContextTimeoutEnabled: true,
	}
}

// Options returns a fresh copy of the options of [Cluster.Client], for a
// client that needs more settings (an ACL user's, DisableIdentity).
func (c *Cluster) Options() *redis.ClusterOptions { return c.clientOptions() }

// Client returns a new ClusterClient for c, closed in t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(c.clientOptions())
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func (c *Cluster) logTails() string {
	var b strings.Builder
	for i, n := range c.all() {
		b.WriteString("=== node " + strconv.Itoa(i) + " " + n.Addr() + " ===\n" + n.logTail())
	}
	return b.String()
}
