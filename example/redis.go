package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// connectRedis returns a client of the Redis the options name and the
// function that closes it: a Redis Cluster (-redis-addrs, with
// $REDIS_USERNAME and $REDIS_PASSWORD, over TLS with -redis-tls or
// -redis-ca), a Redis server (-redis, a redis:// or rediss:// URL whose
// TLS, user, password and database it honours), or else an embedded
// miniredis. It says which: on out, or for the embedded one in an INFO
// line of logger.
func connectRedis(ctx context.Context, o options, out io.Writer, logger *slog.Logger) (redis.UniversalClient, func(), error) {
	if o.redisURL == "" && o.redisAddrs == "" {
		mr := miniredis.NewMiniRedis()
		mr.ClockTTL(true) // expire keys by the wall clock, as Redis does; lock cooldowns rely on it
		if err := mr.Start(); err != nil {
			return nil, nil, fmt.Errorf("start embedded redis: %w", err)
		}
		logger.Info("redis: an embedded miniredis, in memory, for trying the example: not for production; set REDIS_URL or REDIS_ADDRS for a real Redis",
			slog.String("addr", mr.Addr()))
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
		rdb.AddHook(embeddedMemoryInfo{})
		return rdb, func() { rdb.Close(); mr.Close() }, nil
	}

	var (
		addrs     []string
		tlsConf   *tls.Config
		newClient func() redis.UniversalClient
	)
	if o.redisAddrs != "" {
		for a := range strings.SplitSeq(o.redisAddrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		if o.redisTLS || o.redisCA != "" {
			// No ServerName: each node's is taken from its address. No
			// RootCAs unless -redis-ca: the system's.
			tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		newClient = func() redis.UniversalClient {
			return redis.NewUniversalClient(&redis.UniversalOptions{
				Addrs: addrs,
				// Several addresses make a cluster client; so does one.
				IsClusterMode: true,
				Username:      os.Getenv("REDIS_USERNAME"),
				Password:      os.Getenv("REDIS_PASSWORD"),
				TLSConfig:     tlsConf,
				// Deadlines on contexts bound socket reads too: the
				// recruiter's RedisTimeout and the order status's wait
				// rely on it.
				ContextTimeoutEnabled: true,
				// No CLIENT SETINFO, which the documented least-privilege
				// ACL user may not send (docs/redis.md).
				DisableIdentity: true,
			})
		}
	} else {
		u, err := redis.ParseURL(o.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("redis URL: %w", err)
		}
		addrs, tlsConf = []string{u.Addr}, u.TLSConfig
		u.ContextTimeoutEnabled = true
		u.DisableIdentity = true // as above: the ACL user may not send CLIENT SETINFO
		newClient = func() redis.UniversalClient { return redis.NewClient(u) }
	}
	if o.redisCA != "" {
		if tlsConf == nil {
			return nil, nil, fmt.Errorf("-redis-ca %s is for TLS: use a rediss:// URL", o.redisCA)
		}
		pem, err := os.ReadFile(o.redisCA)
		if err != nil {
			return nil, nil, fmt.Errorf("redis CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("redis CA: no PEM certificate in %s", o.redisCA)
		}
		tlsConf.RootCAs = pool
	}
	rdb := newClient()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", strings.Join(addrs, ","), err)
	}
	kind := "server"
	if _, ok := rdb.(*redis.ClusterClient); ok {
		kind = "cluster"
	}
	fmt.Fprintf(out, "redis: %s at %s, tls %t\n", kind, strings.Join(addrs, ","), tlsConf != nil)
	return rdb, func() { rdb.Close() }, nil
}

// embeddedMemoryInfo answers INFO memory for the embedded miniredis,
// which has no such section: the recruiter reads the eviction policy
// there, and would log at start-up that it could not. miniredis has no
// maxmemory and never evicts, which is what this reply says.
type embeddedMemoryInfo struct{}

// embeddedMemoryReply is INFO memory as a Redis without maxmemory answers
// it, cut to the fields that worksteal reads.
const embeddedMemoryReply = "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n"

func (embeddedMemoryInfo) DialHook(next redis.DialHook) redis.DialHook { return next }

func (embeddedMemoryInfo) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if c, ok := cmd.(*redis.StringCmd); ok && len(args) == 2 && strings.EqualFold(cmd.Name(), "info") &&
			strings.EqualFold(fmt.Sprint(args[1]), "memory") {
			c.SetVal(embeddedMemoryReply)
			return nil
		}
		return next(ctx, cmd)
	}
}

func (embeddedMemoryInfo) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
