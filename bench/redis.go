package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/worksteal/worksteal/internal/redistest"
)

// cmdStat is one line of INFO commandstats: calls and Redis's own time.
type cmdStat struct {
	Calls int64
	Usec  int64
}

// commandStats reads INFO commandstats: command name → calls, usec. Redis
// counts the commands a script makes too, so a script call shows as its
// evalsha plus its inner commands.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string]cmdStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]cmdStat{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		var s cmdStat
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.Calls = n
			case "usec":
				s.Usec = n
			}
		}
		out[name] = s
	}
	return out, nil
}

// statsDelta is what happened between two commandstats readings, less the
// INFO calls that took them.
type statsDelta map[string]cmdStat

func deltaStats(before, after map[string]cmdStat) statsDelta {
	d := statsDelta{}
	for name, a := range after {
		b := before[name]
		if a.Calls-b.Calls > 0 {
			d[name] = cmdStat{a.Calls - b.Calls, a.Usec - b.Usec}
		}
	}
	delete(d, "info")
	return d
}

// total counts every command Redis ran, those inside scripts included,
// and Redis's time in scripts.
func (d statsDelta) total() (calls, usec int64) {
	for _, s := range d {
		calls += s.Calls
	}
	return calls, d.scriptUsec()
}

// scriptUsec is Redis's time in script calls. It includes their inner
// commands' time, which commandstats also lists under their own names, so
// it, not the sum of every line, is Redis's busy time when every client
// call is a script.
func (d statsDelta) scriptUsec() int64 { return d["evalsha"].Usec + d["eval"].Usec }

// scripts counts script calls (one round trip each from a client).
func (d statsDelta) scripts() int64 { return d["evalsha"].Calls + d["eval"].Calls }

func infoField(info, key string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

// newCountedClient is a client of its own with a round-trip counter, so
// that the traffic of one role (the recruiter's locks, the jobs' queue
// calls, the producer) can be told apart from the others'.
func newCountedClient(addr string, pool int) (*redis.Client, *redistest.RoundTrips) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: pool})
	h := &redistest.RoundTrips{}
	rdb.AddHook(h)
	return rdb, h
}
