package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// globals are the flags every command takes, before or after its name.
type globals struct {
	redisURL, cluster, sentinel, master string
	prefix, caFile                      string
	json                                bool
	timeout                             time.Duration
}

const usage = `usage: worksteal [flags] COMMAND [ARGS]

Commands (what Redis holds; per-process counts are in each process's
dashboard and metrics):
  stats                        queues by state, dead letters, jobs running and paused
  queues                       the registered queues, their config and depth
  jobs                         the registered jobs: pace, budget, lock, pause, schedule
  schedules                    the scheduled jobs: last and next tick
  types                        the task types each queue's Mux serves
  items QUEUE STATE            a page of STATES items
  dead list QUEUE              a page of dead letters, with their causes
  dead retry QUEUE ID...|--all move dead letters back to pending
  dead purge QUEUE ID...|--all delete dead letters
                               (--all --max N: the N oldest)
  pause JOB [FOR]              pause a job fleet-wide (default 1h, at most 720h)
  resume JOB                   resume a paused job
  task show ID [--queue Q]     an item's state, attempts, cause and task
  task cancel ID [--queue Q]   cancel a task, a chain or a fan-out: never run
                               if waiting, its handler's context ended if running
  chain QUEUE ID               a chain's state (running, done, failed, canceled)
                               and its current step
  fanout QUEUE ID              a fan-out's state and its children done and dead

Exit codes: 0 done, 1 Redis failed, 2 bad usage, 3 no such queue, job or
item (dead retry and purge: an id that is no dead letter of the queue;
the others are done), 4 refused by the ACL user's grant (docs/redis.md),
5 no queues or jobs under the prefix (is --prefix right?).

Install: go install github.com/worksteal/worksteal/cmd/worksteal@latest,
or from a checkout: cd cmd/worksteal && go install .

Flags:
`

// usageText is usage with the states that items lists.
func usageText() string { return strings.Replace(usage, "STATES", stateNames(), 1) }

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.redisURL, "redis", envOr("WORKSTEAL_REDIS", "redis://localhost:6379"),
		"a server: redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS ($WORKSTEAL_REDIS)")
	fs.StringVar(&g.cluster, "cluster", os.Getenv("WORKSTEAL_CLUSTER"),
		"a Redis Cluster: redis[s]://[USER:PASSWORD@]HOST:PORT?addr=HOST:PORT&addr=… ($WORKSTEAL_CLUSTER)")
	fs.StringVar(&g.sentinel, "sentinel", os.Getenv("WORKSTEAL_SENTINEL"),
		"Sentinels: redis[s]://[USER:PASSWORD@]HOST:PORT?addr=HOST:PORT&…, with --master; the user is the master's ($WORKSTEAL_SENTINEL)")
	fs.StringVar(&g.master, "master", envOr("WORKSTEAL_MASTER", "mymaster"), "the Sentinels' master name")
	fs.StringVar(&g.caFile, "cacert", os.Getenv("WORKSTEAL_CACERT"), "trust this CA (a PEM file) for rediss:// ($WORKSTEAL_CACERT)")
	fs.StringVar(&g.prefix, "prefix", envOr("WORKSTEAL_PREFIX", "worksteal"), "the fleet's key prefix ($WORKSTEAL_PREFIX)")
	fs.BoolVar(&g.json, "json", false, "print JSON for scripts instead of tables")
	fs.DurationVar(&g.timeout, "timeout", 10*time.Second, "give up after this long")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parse reads flags anywhere among args (the flag package stops at the
// first argument), and returns the arguments in order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet is a FlagSet with the globals, whose errors come back to
// the caller (usage printed to out on -h).
func newFlagSet(name string, g *globals, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageText())
		fs.PrintDefaults()
	}
	g.register(fs)
	return fs
}

// client connects as the flags say: a cluster, Sentinels, or one server.
// The client does not announce itself (CLIENT SETINFO), which a
// least-privilege ACL user may not run (docs/redis.md).
func (g *globals) client() (redis.UniversalClient, error) {
	var roots *x509.CertPool
	if g.caFile != "" {
		pem, err := os.ReadFile(g.caFile)
		if err != nil {
			return nil, usagef("--cacert: %v", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, usagef("--cacert %s: no PEM certificate in it", g.caFile)
		}
	}
	trust := func(c *tls.Config) error {
		switch {
		case roots == nil:
		case c == nil:
			return usagef("--cacert with a redis:// address: use rediss:// for TLS")
		default:
			c.RootCAs = roots
		}
		return nil
	}
	switch {
	case g.cluster != "" && g.sentinel != "":
		return nil, usagef("--cluster and --sentinel: give one")
	case g.cluster != "":
		o, err := redis.ParseClusterURL(g.cluster)
		if err != nil {
			return nil, usagef("--cluster: %v", err)
		}
		if err := trust(o.TLSConfig); err != nil {
			return nil, err
		}
		o.DisableIdentity, o.ContextTimeoutEnabled = true, true
		return redis.NewClusterClient(o), nil
	case g.sentinel != "":
		o, err := failoverOptions(g.sentinel, g.master)
		if err != nil {
			return nil, usagef("--sentinel: %v", err)
		}
		if err := trust(o.TLSConfig); err != nil {
			return nil, err
		}
		return redis.NewFailoverClient(o), nil
	}
	o, err := redis.ParseURL(g.redisURL)
	if err != nil {
		return nil, usagef("--redis: %v", err)
	}
	if err := trust(o.TLSConfig); err != nil {
		return nil, err
	}
	o.DisableIdentity, o.ContextTimeoutEnabled = true, true
	return redis.NewClient(o), nil
}

// failoverOptions reads the Sentinels' addresses, the master's user and
// TLS from a URL shaped as a cluster's.
func failoverOptions(raw, master string) (*redis.FailoverOptions, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("scheme %q: want redis or rediss", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no address")
	}
	addrs := append([]string{u.Host}, u.Query()["addr"]...)
	o := &redis.FailoverOptions{MasterName: master, SentinelAddrs: addrs, DisableIdentity: true, ContextTimeoutEnabled: true}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	if u.Scheme == "rediss" {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: strings.Split(u.Host, ":")[0]}
	}
	return o, nil
}
