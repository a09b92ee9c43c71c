package recruiter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// TestEvictionPolicyIsNamed: with the defaults and one job with Every (no
// traffic), a server whose maxmemory-policy may evict worksteal's keys is
// named in one warning within seconds of start-up, and in Stats; a server
// with noeviction gets none. A change of policy while running is warned
// about at the next reading (every few minutes: not waited for here).
func TestEvictionPolicyIsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		warn   string // in the warning and Stats.EvictionRisk; "" for none
	}{
		{"allkeys-lru", "queued items"},
		{"volatile-ttl", "job locks"},
		{"noeviction", ""},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", tc.policy)
			logs := &logBuffer{}
			rec := newRecruiter(t, srv.Client(t), recruiter.Config{}, logs)
			mustRegister(t, rec, recruiter.Func("tidy", noop), recruiter.JobConfig{Every: time.Second})
			testrig.Eventually(t, 10*time.Second, "the policy read", func() bool { return rec.Stats().EvictionPolicy == tc.policy })
			st := rec.Stats()
			warnings := logs.lines("level=WARN", "maxmemory-policy is "+tc.policy)
			if tc.warn == "" {
				if st.EvictionRisk != "" || warnings != 0 || strings.Contains(logs.String(), "maxmemory-policy") {
					t.Fatalf("noeviction: risk %q, logs:\n%s\nwant no warning", st.EvictionRisk, logs)
				}
				return
			}
			if !strings.Contains(st.EvictionRisk, tc.warn) || !strings.Contains(st.EvictionRisk, "noeviction") {
				t.Errorf("EvictionRisk = %q, want it to name %q and what to set", st.EvictionRisk, tc.warn)
			}
			if warnings != 1 {
				t.Errorf("%d warnings naming the policy, want 1; logs:\n%s", warnings, logs)
			}
		})
	}
}

// TestEvictionPolicyUnreadable: a server that refuses INFO (an ACL user
// without +info) costs one informational line, no warning and no error,
// and the jobs run as ever.
func TestEvictionPolicyUnreadable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	opts := srv.Options()
	opts.Username, opts.Password = "noinfo", "pw"
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	logs := &logBuffer{}
	rec := newRecruiter(t, rdb, recruiter.Config{}, logs)
	mustRegister(t, rec, recruiter.Func("tidy", noop), recruiter.JobConfig{Every: 100 * time.Millisecond})
	testrig.Eventually(t, 10*time.Second, "the job ran and the refusal was noted", func() bool {
		return jobStats(t, rec, "tidy").Ran >= 2 && logs.count("could not read the Redis server's maxmemory-policy") == 1
	})
	if st := rec.Stats(); st.EvictionPolicy != "" || st.EvictionRisk != "" || logs.count("level=WARN") != 0 || logs.count("level=ERROR") != 0 {
		t.Fatalf("stats policy %q risk %q, logs:\n%s\nwant nothing but the one note", st.EvictionPolicy, st.EvictionRisk, logs)
	}
}
