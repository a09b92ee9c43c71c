package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover is a master killed on purpose by [Cluster.KillMaster] or
// [Sentinel.KillMaster], whose replica is to be promoted in its place.
type Failover struct {
	Old      *Server   // the master killed
	KilledAt time.Time // just after the process was gone

	replicas []*Server  // Old's replicas when it died
	switches *switchLog // Sentinel only: the masters named after the kill
	// routed reports nil once the set-up sends clients to promoted: every
	// cluster node serves the slot from it, or every Sentinel names it.
	routed func(ctx context.Context, promoted *Server) error
	logs   func() string
}

// WaitPromoted waits until one of the dead master's replicas says it is a
// master (ROLE), and returns it and when that was first seen (polled every
// 15 ms); then, before it returns, until the set-up sends clients to it.
// It fails the test after within.
func (f *Failover) WaitPromoted(t testing.TB, within time.Duration) (promoted *Server, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	clients := make([]*redis.Client, len(f.replicas))
	for i, r := range f.replicas {
		clients[i] = redis.NewClient(r.clientOptions())
		defer clients[i].Close()
	}
	for promoted == nil {
		for i, cl := range clients {
			if role, err := cl.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
				promoted, at = f.replicas[i], time.Now()
				break
			}
		}
		if promoted != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("redistest: no replica of %s promoted within %v of its kill\n%s", f.Old.Addr(), within, f.logs())
		}
		time.Sleep(pollInterval)
	}
	for {
		err := f.routed(ctx, promoted)
		if err == nil {
			return promoted, at
		}
		if ctx.Err() != nil {
			t.Fatalf("redistest: %s promoted in place of %s, but clients are not sent to it within %v: %v\n%s",
				promoted.Addr(), f.Old.Addr(), within, err, f.logs())
		}
		time.Sleep(pollInterval)
	}
}

// replicasOf returns those of nodes that replicate master (ROLE).
func replicasOf(ctx context.Context, t testing.TB, master *Server, nodes []*Server) []*Server {
	t.Helper()
	var out []*Server
	for _, n := range nodes {
		if n == master {
			continue
		}
		cl := redis.NewClient(n.clientOptions())
		role, err := cl.Do(ctx, "ROLE").Slice()
		_ = cl.Close()
		if err != nil {
			t.Fatalf("redistest: ROLE on %s: %v", n.Addr(), err)
		}
		if len(role) < 3 || role[0] != "slave" {
			continue
		}
		host, _ := role[1].(string)
		port, _ := role[2].(int64)
		if net.JoinHostPort(host, strconv.FormatInt(port, 10)) == master.Addr() {
			out = append(out, n)
		}
	}
	return out
}

// errNotYet is a readiness check that has not passed yet.
var errNotYet = errors.New("not yet")

// pollUntil calls check every pollInterval until it returns nil, and
// fails the test naming what when ctx ends first.
func pollUntil(ctx context.Context, t testing.TB, what string, check func() error, logs func() string) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("redistest: %s: %v\n%s", what, err, logs())
		}
		time.Sleep(pollInterval)
	}
}

func notYet(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNotYet}, args...)...)
}

// Switch is a master named by a Sentinel's +switch-master message.
type Switch struct {
	Addr string
	At   time.Time // when the message came
}

// Switches returns the masters the Sentinels named after the kill, in
// order, each once (Sentinel set-ups only; nil for a cluster). More than
// one means a second failover: writes acknowledged by the first master
// promoted were lost when it became a replica of the second, as Redis's
// asynchronous replication allows.
func (f *Failover) Switches() []Switch {
	if f.switches == nil {
		return nil
	}
	f.switches.mu.Lock()
	defer f.switches.mu.Unlock()
	return append([]Switch(nil), f.switches.seen...)
}

type switchLog struct {
	mu   sync.Mutex
	seen []Switch
}

func (l *switchLog) add(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.seen); n > 0 && l.seen[n-1].Addr == addr {
		return
	}
	l.seen = append(l.seen, Switch{Addr: addr, At: time.Now()})
}
