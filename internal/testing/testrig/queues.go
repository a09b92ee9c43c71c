package testrig

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNow reads Redis's clock, the one leases and delays are measured by.
func RedisNow(t testing.TB, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// UntilRedisTime polls Redis's clock until it reaches tm: for leases and
// delays, which are measured by that clock, not ours.
func UntilRedisTime(t testing.TB, rdb redis.UniversalClient, tm time.Time) {
	t.Helper()
	Eventually(t, 10*time.Second, "Redis time past "+tm.String(), func() bool {
		return !RedisNow(t, rdb).Before(tm)
	})
}

// ItemFields counts the fields of a queue hash that belong to items: all
// but the field "" that keeps the hash in Redis's hashtable encoding.
func ItemFields(t testing.TB, rdb redis.UniversalClient, key string) int {
	t.Helper()
	ctx := context.Background()
	n, err := rdb.HLen(ctx, key).Result()
	if err != nil {
		t.Fatalf("HLEN %s: %v", key, err)
	}
	pinned, err := rdb.HExists(ctx, key, "").Result()
	if err != nil {
		t.Fatalf("HEXISTS %s: %v", key, err)
	}
	if pinned {
		n--
	}
	return int(n)
}

// EnqueueAtOnce makes n calls of enqueue at once, one each with i from 0,
// and fails the test unless all return one id and exactly one added it.
func EnqueueAtOnce(t *testing.T, n int, what string, enqueue func(i int) (id string, duplicate bool, err error)) string {
	t.Helper()
	ids, dups := make([]string, n), make([]bool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			if ids[i], dups[i], err = enqueue(i); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	added := 0
	for i := range n {
		if ids[i] != ids[0] {
			t.Fatalf("%s %d returned %s, %s 0 %s", what, i, ids[i], what, ids[0])
		}
		if !dups[i] {
			added++
		}
	}
	if added != 1 {
		t.Fatalf("%d of %d calls of %s added, want 1", added, n, what)
	}
	return ids[0]
}
