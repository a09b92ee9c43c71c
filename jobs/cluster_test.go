package jobs_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Every job's scripts run on a 3-master cluster; each case has its own
// queue or key, so the cases land on different slots and masters.
func TestEveryJobOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	fast := queue.Config{Lease: 20 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}
	cases := []struct {
		name string
		run  func(t *testing.T, name string)
	}{
		{"tidy", func(t *testing.T, name string) {
			q := newQueue(t, cc, name, fast)
			enqueue(t, q, "x", 30)
			items := mustClaim(t, q, 30, 30)
			untilRedisTime(t, cc, items[0].Deadline)
			job, err := jobs.TidyStale(q, jobs.TidyConfig{Batching: jobs.Batching{Batch: 7}})
			if err != nil {
				t.Fatal(err)
			}
			wantReport(t, mustSlice(t, job, 5*time.Second), recruiter.Report{Items: 30}, "tidy")
			wantDepth(t, q, queue.Depth{Pending: 30})
		}},
		{"drain-retries", func(t *testing.T, name string) {
			// The default lease: a drain starts an item only while the
			// lease, less a margin for the settle, outlasts it, which
			// fast's 20ms lease did not after a slow claim.
			q := newQueue(t, cc, name, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
			ids := enqueue(t, q, "item-", 40)
			c := &calls{}
			failOnce := func(ctx context.Context, it queue.Item) ([]byte, error) {
				if it.Attempt == 1 && it.Payload[len(it.Payload)-1] == '7' {
					return nil, context.Canceled // any error: a retry
				}
				return echo(c)(ctx, it)
			}
			drain := mustDrain(t, q, failOnce, jobs.DrainConfig{Batching: jobs.Batching{Batch: 16}})
			// The drain's claims promote the retries when due, in this
			// slice's later batches or the next slice's.
			settled := 0
			testrig.Eventually(t, 5*time.Second, "40 items and 4 retries settled", func() bool {
				settled += mustSlice(t, drain, 5*time.Second).Items
				return settled >= 44 && mustDepth(t, q) == queue.Depth{}
			})
			if settled != 44 {
				t.Fatalf("drain settled %d, want 40 items and 4 retries", settled)
			}
			wantResults(t, q, c, "item-", ids)
		}},
		{"promote", func(t *testing.T, name string) {
			q := newQueue(t, cc, name, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
			enqueue(t, q, "x", 12)
			items := mustClaim(t, q, 12, 12)
			nacks := make([]queue.Settlement, len(items))
			for i, it := range items {
				nacks[i] = queue.Settlement{Item: it, Err: context.Canceled}
			}
			if st, err := q.Settle(testContext(t), nacks...); st.Retried != 12 || err != nil {
				t.Fatalf("Settle = %+v, %v; want 12 retried", st, err)
			}
			untilRedisTime(t, cc, redisNow(t, cc).Add(2*time.Millisecond))
			promote, err := jobs.PromoteDue(q, jobs.PromoteConfig{Batching: jobs.Batching{Batch: 5}})
			if err != nil {
				t.Fatal(err)
			}
			wantReport(t, mustSlice(t, promote, 5*time.Second), recruiter.Report{Items: 12}, "promote")
			wantDepth(t, q, queue.Depth{Pending: 12})
		}},
		{"drain-release", func(t *testing.T, name string) {
			q := newQueue(t, cc, name, queue.Config{})
			enqueue(t, q, "x", 20)
			// Items of 50ms in a budget of 500ms: at most 10 fit, and the
			// claim has most of the budget to reach the cluster, which a
			// loaded machine needed more than the 50ms it once had.
			slow := func(ctx context.Context, it queue.Item) ([]byte, error) {
				time.Sleep(50 * time.Millisecond)
				return nil, nil
			}
			rep := mustSlice(t, mustDrain(t, q, slow, jobs.DrainConfig{Concurrency: 1}), 500*time.Millisecond)
			if rep.Items < 1 || rep.Items > 10 || !rep.More {
				t.Fatalf("slice = %+v; want a few items and More", rep)
			}
			wantDepth(t, q, queue.Depth{Pending: int64(20 - rep.Items)})
		}},
		{"evict-fields", func(t *testing.T, name string) { evictOnCluster(t, cc, name) }},
		{"evict-fields-own-tag", func(t *testing.T, name string) { evictOnCluster(t, cc, "app:{"+name+"}:cache") }},
		{"evict-members", func(t *testing.T, name string) {
			ctx := testContext(t)
			now := redisNow(t, cc)
			for i := range 50 {
				cc.ZAdd(ctx, name,
					redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: "gone-" + strconv.Itoa(i)},
					redis.Z{Score: float64(now.Add(time.Hour).UnixMilli()), Member: "here-" + strconv.Itoa(i)})
			}
			job, err := jobs.EvictExpiredMembers(cc, name, jobs.EvictConfig{Batching: jobs.Batching{Batch: 20}})
			if err != nil {
				t.Fatal(err)
			}
			wantReport(t, mustSlice(t, job, 5*time.Second), recruiter.Report{Items: 50}, "evict members")
			if n := cc.ZCard(ctx, name).Val(); n != 50 {
				t.Fatalf("%d members left, want 50", n)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, testPrefix(t))
		})
	}
}

// evictOnCluster runs an expiring hash's writer and eviction on a cluster,
// after checking that its two keys share a slot.
func evictOnCluster(t *testing.T, cc *redis.ClusterClient, key string) {
	ctx := testContext(t)
	h := mustHash(t, cc, key)
	values, expiry := h.Keys()
	s1, err1 := cc.ClusterKeySlot(ctx, values).Result()
	s2, err2 := cc.ClusterKeySlot(ctx, expiry).Result()
	if s1 != s2 || err1 != nil || err2 != nil {
		t.Fatalf("slots of %s and %s: %d, %d (%v, %v); want one", values, expiry, s1, s2, err1, err2)
	}
	setFields(t, h, "old-", 30, time.Millisecond)
	setFields(t, h, "live-", 30, time.Hour)
	waitExpired(t, cc)
	if v, err := h.Get(ctx, "live-3"); string(v) != "v:live-3" || err != nil {
		t.Fatalf("Get = %q, %v", v, err)
	}
	job, err := jobs.EvictExpired(h, jobs.EvictConfig{Batching: jobs.Batching{Batch: 8}})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, job, 5*time.Second), recruiter.Report{Items: 30}, "evict fields")
	if n, err := h.Delete(ctx, "live-0", "old-0"); n != 1 || err != nil {
		t.Fatalf("Delete = %d, %v; want 1", n, err)
	}
	if n := cc.HLen(ctx, values).Val(); n != 29 {
		t.Fatalf("%d fields left, want 29", n)
	}
}
