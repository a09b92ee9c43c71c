package recruiter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/joblock"
	"github.com/worksteal/worksteal/internal/worksqueue"
)

// Errors that [Recruiter.Check] wraps, one per kind of problem, so that a
// service can tell a Redis that is down (stolen work waits for it) from a
// setting that is wrong (a deploy to fix).
var (
	// ErrRedisUnreachable: no connection: the dial failed (refused, no
	// such host, timed out, TLS), the server refused the credentials, or
	// it did not answer within Config.RedisTimeout.
	ErrRedisUnreachable = errors.New("recruiter: Redis unreachable")
	// ErrRedisDenied: the ACL user lacks a command that the recruiter
	// sends or one of its scripts calls, or its key patterns leave out
	// the prefix (the grant: docs/redis.md#acl-permissions).
	ErrRedisDenied = errors.New("recruiter: Redis ACL user lacks a permission")
	// ErrRedisEvicts: the server's maxmemory-policy may evict
	// worksteal's keys.
	ErrRedisEvicts = errors.New("recruiter: Redis may evict worksteal's keys")
)

// Check asks Redis what the recruiter will need of it, for a service to
// call at start-up ([New] does not dial): that it answers, that the ACL
// user may run every command the recruiter sends and each of its scripts
// calls (on every master of a Cluster), and that its maxmemory-policy
// does not evict. It returns nil, or every problem found joined
// (errors.Join), each wrapping [ErrRedisUnreachable], [ErrRedisDenied] or
// [ErrRedisEvicts] and naming what is wrong: the address and the dial's
// error, the command and the scripts that call it, the policy. It returns
// within [Config].RedisTimeout, or ctx's deadline if sooner (on a server
// that accepts the dial but hangs, with go-redis's ContextTimeoutEnabled:
// docs/redis.md#timeouts). The ACL part
// needs Redis 7 or later (redis.acl_check_cmd); against 6.2 it is left out.
//
// Check writes nothing: each command is tried with redis.acl_check_cmd in
// one read-only script, not run. The queues that its registered jobs of
// packages jobs and tasks work are covered too, each on a key of its own
// (their commands are those of every queue script); a queue that no
// registered job works is not.
//
// Do not gate a readiness probe on it, nor on Redis at all: stolen work
// is optional, and a Redis outage must not take the fleet out of its load
// balancer. Log its error at start-up, and watch the breaker afterwards:
// [Stats].BreakerOpen, the metric worksteal.breaker.open
// (worksteal_breaker_open in Prometheus) and the dashboard.
func (r *Recruiter) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	if err := r.dialRedis(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrRedisUnreachable, err)
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	node := func(ctx context.Context, c redis.UniversalClient, where string) error {
		found := r.checkNode(ctx, c, where)
		mu.Lock()
		errs = append(errs, found...)
		mu.Unlock()
		return nil
	}
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return node(ctx, c, " on "+c.Options().Addr)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: the Cluster's masters: %w", ErrRedisUnreachable, r.late(err)))
		}
	} else {
		_ = node(ctx, r.rdb, "")
	}
	return errors.Join(errs...)
}

// checkNode checks one server: that it answers and its ACL, then the
// eviction policy. where names the server in a Cluster; "" otherwise.
func (r *Recruiter) checkNode(ctx context.Context, c redis.UniversalClient, where string) []error {
	// The ACL probe comes first and is the ping: PING is not in the grant.
	var errs []error
	if err := r.checkACL(ctx, c, where); errors.Is(err, ErrRedisUnreachable) {
		return []error{err}
	} else if err != nil {
		errs = append(errs, err)
	}
	info, err := c.Info(ctx, "memory").Result()
	switch {
	case isDenied(err):
		errs = append(errs, fmt.Errorf("%w%s: INFO memory, with which the recruiter reads the eviction policy: %w; grant +info (docs/redis.md#acl-permissions)", ErrRedisDenied, where, err))
	case err != nil:
		errs = append(errs, fmt.Errorf("%w%s: INFO memory: %w", ErrRedisUnreachable, where, r.late(err)))
	default:
		if policy, _ := parseMemoryInfo(info); evictionRisk(policy) != "" {
			errs = append(errs, fmt.Errorf("%w%s: maxmemory-policy is %s: %s", ErrRedisEvicts, where, policy, evictionRisk(policy)))
		}
	}
	return errs
}

// aclProbe tries each command of ARGV, with the key ARGV[1] as its first
// argument (every command the recruiter sends takes its key first, or
// none; a script's, after its body and a key count), and returns those the user may not run; false where the server
// has no redis.acl_check_cmd (before Redis 7). It declares no key, so
// that any master of a Cluster runs it.
var aclProbe = redis.NewScript(`
if not redis.acl_check_cmd then return false end
local denied = {}
for i = 2, #ARGV do
  local ok, allowed
  if ARGV[i] == 'eval' or ARGV[i] == 'evalsha' then
    ok, allowed = pcall(redis.acl_check_cmd, ARGV[i], 'return 1', '1', ARGV[1])
  else
    ok, allowed = pcall(redis.acl_check_cmd, ARGV[i], ARGV[1])
  end
  if not ok or not allowed then denied[#denied + 1] = ARGV[i] end
end
return denied
`)

// recruiterCommands maps each command the recruiter sends, itself or in a
// script, to what sends it.
func recruiterCommands() map[string][]string {
	uses := map[string][]string{
		"evalsha": {"every script"},
		"eval":    {"every script, the first time"},
		"pttl":    {"the open breaker's check"},
		"hset":    {"the registry"},
	}
	for name, src := range map[string]string{
		"lock_acquire.lua": acquireSource,
		"lock_refresh.lua": refreshSource,
		"lock_release.lua": releaseSource,
		"lock_rest.lua":    restSource,
		"lock_seat.lua":    seatSource,
		"pause.lua":        joblock.PauseSource(),
	} {
		worksqueue.AddCommands(uses, name, src) // keeps each list sorted
	}
	return uses
}

// checkACL runs aclProbe for the recruiter's commands on a lock key (the
// registry's key shares the prefix's patterns: docs/redis.md), then for
// the commands of the scripts of each queue its jobs work, on a key of
// that queue.
func (r *Recruiter) checkACL(ctx context.Context, c redis.Scripter, where string) error {
	key := joblock.Key(r.cfg.Prefix, "check")
	entries := r.jobs.Load().entries
	if len(entries) > 0 {
		key = entries[0].lock.key
	}
	err := r.probeACL(ctx, c, where, key, recruiterCommands(), "the recruiter")
	if errors.Is(err, ErrRedisUnreachable) {
		return err
	}
	errs := []error{err}
	seen := map[string]bool{}
	for _, e := range entries {
		qkey, uses, ok := worksqueue.Commands(e.job)
		if !ok || seen[qkey] {
			continue
		}
		seen[qkey] = true
		errs = append(errs, r.probeACL(ctx, c, where, qkey, uses, "the queue scripts of job "+e.name))
	}
	return errors.Join(errs...)
}

// probeACL runs aclProbe for the commands of uses on key, on behalf of
// who, and says which the user lacks.
func (r *Recruiter) probeACL(ctx context.Context, c redis.Scripter, where, key string, uses map[string][]string, who string) error {
	args := []any{key}
	for _, cmd := range slices.Sorted(maps.Keys(uses)) {
		args = append(args, cmd)
	}
	reply, err := aclProbe.Run(ctx, c, nil, args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil // before Redis 7: not checked
	case isDenied(err):
		return fmt.Errorf("%w%s: EVALSHA or EVAL, with which the recruiter runs its scripts: %w; grant +evalsha +eval (docs/redis.md#acl-permissions)", ErrRedisDenied, where, err)
	case err != nil:
		return fmt.Errorf("%w%s: %w", ErrRedisUnreachable, where, r.late(err)) // WRONGPASS, NOAUTH, a timeout
	}
	denied, _ := reply.([]any)
	if len(denied) == 0 {
		return nil
	}
	var lacks, grant []string
	for _, d := range denied {
		cmd := fmt.Sprint(d)
		lacks = append(lacks, fmt.Sprintf("%s (%s)", cmd, strings.Join(uses[cmd], ", ")))
		grant = append(grant, "+"+cmd)
	}
	return fmt.Errorf("%w%s: for %s, the user may not run %s on %s; grant %s on keys %s:* (docs/redis.md#acl-permissions)",
		ErrRedisDenied, where, who, strings.Join(lacks, ", "), key, strings.Join(grant, " "), r.cfg.Prefix)
}

func isDenied(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM")
}

// explain adds to err, when it is only a deadline, why: go-redis retries
// a refused dial until the context ends, then returns the context's
// error, not the dial's. One dial of its own, within RedisTimeout, names
// it: the address and the refusal, the unknown host, the TLS error or
// the dial's own timeout.
func (r *Recruiter) explain(ctx context.Context, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RedisTimeout)
	defer cancel()
	if derr := r.dialRedis(ctx); derr != nil {
		return fmt.Errorf("%w; %w", err, derr)
	}
	return err
}

// late says what a deadline means in Check, where the dial has passed.
func (r *Recruiter) late(err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no answer within RedisTimeout (%v): %w", r.cfg.RedisTimeout, err)
	}
	return err
}

// dialRedis opens and closes one connection to each address the client
// was given, as its own dialer would (TLS included), and returns the
// first failure, naming the address. It does not speak to Redis: a
// client type whose addresses it cannot read passes.
func (r *Recruiter) dialRedis(ctx context.Context) error {
	type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	var (
		dial    dialFunc
		network = "tcp"
		addrs   []string
	)
	switch c := r.rdb.(type) {
	case *redis.Client:
		o := c.Options()
		dial, network, addrs = o.Dialer, o.Network, []string{o.Addr}
	case *redis.ClusterClient:
		o := c.Options()
		dial, addrs = o.Dialer, o.Addrs
		if dial == nil {
			nd := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 5 * time.Minute}
			dial = nd.DialContext
			if o.TLSConfig != nil {
				td := &tls.Dialer{NetDialer: nd, Config: o.TLSConfig}
				dial = td.DialContext
			}
		}
	}
	if dial == nil {
		return nil
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			_ = conn.Close()
			return nil // one seed is enough: the client learns the rest from it
		}
		errs = append(errs, fmt.Errorf("dial Redis at %s: %w", addr, err))
	}
	return errors.Join(errs...)
}
