package recruiter

import (
	"bufio"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// evictionRecheck is how often the pace timer reads the server's eviction
// policy again after start-up: a setting that rarely changes, read with
// one INFO.
const evictionRecheck = 5 * time.Minute

// eviction is what the last reading of the server's policy found.
type eviction struct {
	policy string // maxmemory-policy; "" if unknown
	risk   string // what it may evict of ours; "" if nothing
}

// evictionRisk says what a maxmemory-policy may evict of worksteal's keys,
// and what to set; "" for noeviction and policies this version does not
// know. Queued items, their values and dead letters carry no TTL; locks,
// cooldowns, pauses, unique-enqueue keys, results and chain records do,
// so a volatile-* policy can evict only those.
func evictionRisk(policy string) string {
	switch {
	case strings.HasPrefix(policy, "allkeys-"):
		return "at maxmemory Redis may evict any key: queued items, their values, results and dead letters are lost without a trace, and locks too (a job may run twice at once); set maxmemory-policy noeviction, or give worksteal a Redis of its own"
	case strings.HasPrefix(policy, "volatile-"):
		return "at maxmemory Redis may evict keys with a TTL: job locks, cooldowns and pauses (a job may run twice at once or sooner than Every, a pause may end early), unique-enqueue keys (a duplicate may be accepted), and stored results and chain records (a Call or Wait may time out); queued items, their values and dead letters carry no TTL and are safe; set maxmemory-policy noeviction for none of this"
	}
	return ""
}

// checkEviction reads the server's maxmemory-policy with INFO memory (the
// ACL grant in docs/redis.md allows it; managed services that refuse
// CONFIG answer INFO) and logs one warning when it first sees, or sees a
// change to, a policy that may evict worksteal's keys.
func (r *Recruiter) checkEviction() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	info, err := r.rdb.Info(ctx, "memory").Result()
	if err != nil {
		if r.evictionUnread.CompareAndSwap(false, true) {
			r.cfg.Logger.Info("worksteal: could not read the Redis server's maxmemory-policy (INFO memory); make sure it is noeviction (docs/redis.md)",
				slog.Any("error", err))
		}
		return
	}
	policy, maxmemory := parseMemoryInfo(info)
	old := r.eviction.Load()
	next := &eviction{policy: policy, risk: evictionRisk(policy)}
	r.eviction.Store(next)
	if next.risk != "" && (old == nil || old.policy != policy) {
		r.cfg.Logger.Warn("worksteal: the Redis server's maxmemory-policy is "+policy+": "+next.risk,
			slog.String("maxmemory_policy", policy), slog.Int64("maxmemory", maxmemory))
	}
}

// parseMemoryInfo reads maxmemory-policy and maxmemory from INFO memory's
// text; "" and 0 when absent.
func parseMemoryInfo(info string) (policy string, maxmemory int64) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		switch {
		case !ok:
		case k == "maxmemory_policy":
			policy = v
		case k == "maxmemory":
			maxmemory, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return policy, maxmemory
}

// evictionState is the last reading, for Stats and the gauge.
func (r *Recruiter) evictionState() eviction {
	if e := r.eviction.Load(); e != nil {
		return *e
	}
	return eviction{}
}
