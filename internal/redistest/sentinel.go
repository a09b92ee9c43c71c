package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the Sentinels of [StartSentinel] know the
// master by (FailoverOptions.MasterName).
const SentinelMaster = "redistest"

// sentinelTimeout bounds the start of a Sentinel set-up: the Sentinels
// find each other through hello messages sent every 2 s.
const sentinelTimeout = 30 * time.Second

// Sentinel is a primary with two replicas watched by three Sentinels
// (quorum 2, down-after-milliseconds 1000, failover-timeout 5000), as
// [StartSentinel] starts it.
type Sentinel struct {
	servers   []*Server // the primary as started, then its replicas
	sentinels []*Server
}

// StartSentinel starts a primary, two replicas and three Sentinels, each
// run by the same binary as every other server (`redis-server CONF
// --sentinel`), and waits until the replicas are in sync and every
// Sentinel knows the replicas and the other Sentinels, so that a failover
// can be authorized (SENTINEL CKQUORUM). extraArgs are appended to the
// data servers' command lines (not the Sentinels').
func StartSentinel(t testing.TB, extraArgs ...string) *Sentinel {
	t.Helper()
	bin := localBinary(t, "StartSentinel")
	primary := startLocal(t, bin, false, extraArgs)
	s := &Sentinel{servers: []*Server{primary}}
	for range 2 {
		args := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, extraArgs...)
		s.servers = append(s.servers, startLocal(t, bin, false, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	// The Sentinels learn the replicas from the primary's INFO: attach them first.
	pc := redis.NewClient(primary.clientOptions())
	defer pc.Close()
	pollUntil(ctx, t, "replicas in sync with the primary", func() error {
		return s.replicasInSync(ctx)
	}, s.logTails)

	for range 3 {
		s.sentinels = append(s.sentinels, startProcess(t, bin, func(sv *Server, _ []int) {
			conf := filepath.Join(sv.dir, "sentinel.conf")
			// Sentinel rewrites its file with what it learns: it must be its own.
			// A Sentinel that lost the election tries again after twice the
			// failover timeout: at 2 s, on a loaded machine, that second
			// failover came before the first one's news and demoted the
			// master just promoted, losing the writes it had acknowledged.
			text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
				"sentinel down-after-milliseconds %[1]s 1000\n"+
				"sentinel failover-timeout %[1]s 5000\n", SentinelMaster, primary.port)
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				t.Fatalf("redistest: write %s: %v", conf, err)
			}
			sv.args = append([]string{conf, "--sentinel"}, sv.args...)
		}))
	}
	pollUntil(ctx, t, "Sentinels ready", func() error { return s.sentinelsReady(ctx) }, s.logTails)
	return s
}

func (s *Sentinel) replicasInSync(ctx context.Context) error {
	for _, r := range s.servers[1:] {
		cl := redis.NewClient(r.clientOptions())
		info, err := cl.Info(ctx, "replication").Result()
		_ = cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up\r\n") || !strings.Contains(info, "master_sync_in_progress:0\r\n") {
			return notYet("replica %s not in sync", r.Addr())
		}
	}
	return nil
}

func (s *Sentinel) sentinelsReady(ctx context.Context) error {
	for _, sv := range s.sentinels {
		sc := redis.NewSentinelClient(sv.clientOptions())
		replicas, err := sc.Replicas(ctx, SentinelMaster).Result()
		var others []map[string]string
		if err == nil {
			others, err = sc.Sentinels(ctx, SentinelMaster).Result()
		}
		if err == nil {
			err = sc.CkQuorum(ctx, SentinelMaster).Err()
		}
		_ = sc.Close()
		switch {
		case err != nil:
			return fmt.Errorf("Sentinel %s: %w", sv.Addr(), err)
		case len(replicas) != 2 || len(others) != 2:
			return notYet("Sentinel %s knows %d replicas and %d other Sentinels, want 2 and 2", sv.Addr(), len(replicas), len(others))
		}
	}
	return nil
}

// Addrs returns the Sentinels' addresses.
func (s *Sentinel) Addrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, sv := range s.sentinels {
		addrs[i] = sv.Addr()
	}
	return addrs
}

// Servers returns the data servers: the primary as started, then its replicas.
func (s *Sentinel) Servers() []*Server { return append([]*Server(nil), s.servers...) }

// FailoverOptions returns options for redis.NewFailoverClient, with the
// package's short timeouts, no retries and ctx deadlines honoured (as
// [Server.Client]).
func (s *Sentinel) FailoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         s.Addrs(),
		DialTimeout:           dialTimeout,
		ReadTimeout:           ioTimeout,
		WriteTimeout:          ioTimeout,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	}
}

// Client returns a new failover client (redis.NewFailoverClient) of the
// set-up, closed in t.Cleanup.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	c := redis.NewFailoverClient(s.FailoverOptions())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Master returns the data server that the first live Sentinel names master.
func (s *Sentinel) Master(ctx context.Context) (*Server, error) {
	for _, sv := range s.sentinels {
		if !sv.running() {
			continue
		}
		sc := redis.NewSentinelClient(sv.clientOptions())
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err != nil {
			return nil, fmt.Errorf("Sentinel %s: %w", sv.Addr(), err)
		}
		for _, d := range s.servers {
			if len(addr) == 2 && d.Addr() == addr[0]+":"+addr[1] {
				return d, nil
			}
		}
		return nil, fmt.Errorf("Sentinel %s names %v master, not one of ours", sv.Addr(), addr)
	}
	return nil, fmt.Errorf("no Sentinel is running")
}

// KillMaster SIGKILLs the current master and returns the failover under
// way, to wait for the Sentinels to promote a replica.
func (s *Sentinel) KillMaster(t testing.TB) *Failover {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	old, err := s.Master(ctx)
	if err != nil {
		t.Fatalf("redistest: KillMaster: %v", err)
	}
	var live []*Server
	for _, d := range s.servers {
		if d.running() {
			live = append(live, d)
		}
	}
	f := &Failover{Old: old, replicas: replicasOf(ctx, t, old, live), routed: s.names, logs: s.logTails, switches: &switchLog{}}
	if len(f.replicas) == 0 {
		t.Fatalf("redistest: KillMaster: the master %s has no replica\n%s", old.Addr(), s.logTails())
	}
	s.watchSwitches(t, f.switches)
	old.Kill()
	f.KilledAt = time.Now()
	return f
}

// watchSwitches records into log every master that a live Sentinel names
// in a +switch-master message, until the test ends.
func (s *Sentinel) watchSwitches(t testing.TB, log *switchLog) {
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	for _, sv := range s.sentinels {
		if !sv.running() {
			continue
		}
		sc := redis.NewSentinelClient(sv.clientOptions())
		ps := sc.Subscribe(ctx, "+switch-master")
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			t.Fatalf("redistest: subscribe to Sentinel %s: %v", sv.Addr(), err)
		}
		t.Cleanup(func() { _ = ps.Close(); _ = sc.Close() })
		go func() {
			// "<name> <old ip> <old port> <new ip> <new port>"
			for m := range ps.Channel() {
				if f := strings.Fields(m.Payload); len(f) == 5 && f[0] == SentinelMaster {
					log.add(f[3] + ":" + f[4])
				}
			}
		}()
	}
}

// names checks that every live Sentinel names promoted master.
func (s *Sentinel) names(ctx context.Context, promoted *Server) error {
	for _, sv := range s.sentinels {
		if !sv.running() {
			continue
		}
		sc := redis.NewSentinelClient(sv.clientOptions())
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err != nil {
			return fmt.Errorf("Sentinel %s: %w", sv.Addr(), err)
		}
		if len(addr) != 2 || addr[0]+":"+addr[1] != promoted.Addr() {
			return notYet("Sentinel %s names %v master, not %s", sv.Addr(), addr, promoted.Addr())
		}
	}
	return nil
}

func (s *Sentinel) logTails() string {
	var b strings.Builder
	for i, n := range append(s.Servers(), s.sentinels...) {
		kind := "server"
		if i >= len(s.servers) {
			kind = "sentinel"
		}
		b.WriteString("=== " + kind + " " + n.Addr() + " ===\n" + n.logTail())
	}
	return b.String()
}
