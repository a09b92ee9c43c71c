package queue_test

import (
	"maps"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// mustClaimDetailed is ClaimDetailed, which must succeed.
func mustClaimDetailed(t *testing.T, q *queue.Queue, n int) queue.Claimed {
	t.Helper()
	c, err := q.ClaimDetailed(testContext(t), n)
	if err != nil {
		t.Fatalf("ClaimDetailed(%d): %v", n, err)
	}
	return c
}

// wantMaintained compares what a claim brought back and claimed.
func wantMaintained(t *testing.T, c queue.Claimed, promoted, recovered, items int, more bool) {
	t.Helper()
	if c.Promoted != promoted || c.Recovered != recovered || len(c.Items) != items || c.More != more {
		t.Fatalf("claim: promoted %d, recovered %d, %d items, More %v; want %d, %d, %d, %v",
			c.Promoted, c.Recovered, len(c.Items), c.More, promoted, recovered, items, more)
	}
}

// Claim promotes the delayed items that are due, retries and delayed
// enqueues alike, and claims them in the same call; never one before it
// is due by Redis's clock.
func TestClaimPromotesWhatIsDue(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: time.Second, BackoffMax: time.Second})
	ctx := testContext(t)
	failed := mustEnqueue(t, b.q, "fails once")[0]
	if err := b.q.Nack(ctx, mustClaim(t, b.q, 1, 1)[0], nil); err != nil {
		t.Fatal(err)
	}
	later, _, err := b.q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The retry is due in 0.5-1s, the delayed item in 2s: a claim before
	// their time brings back nothing.
	wantMaintained(t, mustClaimDetailed(t, b.q, 10), 0, 0, 0, false)
	wantCounts(t, b.q, queue.Depth{Delayed: 2})

	due := func(id string) time.Time {
		ms, err := b.rdb.ZScore(ctx, tagOf(b.q)+":delayed", id).Result()
		if err != nil {
			t.Fatalf("ZSCORE delayed %s: %v", id, err)
		}
		return time.UnixMilli(int64(ms))
	}
	for _, id := range []string{failed, later} {
		at := due(id)
		untilRedisTime(t, b.rdb, at)
		c := mustClaimDetailed(t, b.q, 10)
		wantMaintained(t, c, 1, 0, 1, false)
		if it := c.Items[0]; it.ID != id {
			t.Fatalf("claimed %s, want %s", it.ID, id)
		}
		if now := redisNow(t, b.rdb); now.Before(at) {
			t.Fatalf("promoted at %v, before it was due at %v", now, at)
		}
		if err := b.q.Ack(ctx, c.Items[0], nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, b.q, queue.Depth{})
}

// Claim hands back the expired leases of a worker that vanished, counting
// their attempt, and claims them in the same call; at the last attempt it
// dead-letters them with Tidy's cause. The vanished worker's claims are
// no longer current.
func TestClaimRecoversExpiredLeases(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, Lease: 20 * time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "abandoned")[0]
	first := mustClaim(t, b.q, 1, 1)[0]
	untilRedisTime(t, b.rdb, first.Deadline)
	c := mustClaimDetailed(t, b.q, 10)
	wantMaintained(t, c, 0, 1, 1, false)
	second := c.Items[0]
	if second.ID != id || second.Attempt != 2 || second.Token == first.Token {
		t.Fatalf("re-claim = %+v, want %s at attempt 2 with a new token", second, id)
	}
	wantErr(t, b.q.Ack(ctx, first, nil), queue.ErrLeaseLost, "the vanished worker's Ack")

	untilRedisTime(t, b.rdb, second.Deadline)
	wantMaintained(t, mustClaimDetailed(t, b.q, 10), 0, 1, 0, false)
	wantCounts(t, b.q, queue.Depth{Dead: 1})
	dead, err := testrig.DeadLetters(ctx, b.q, 1)
	if err != nil || len(dead) != 1 || dead[0].ID != id || dead[0].Cause != "lease expired at attempt 2 of 2" || dead[0].Attempts != 2 {
		t.Fatalf("Dead = %+v, %v; want %s, expired at attempt 2 of 2", dead, err, id)
	}
}

// A claim of n promotes at most n due items and hands back at most n
// expired leases, and says More while it reached either bound, also when
// what it handed back went to the dead letters and left nothing to claim.
func TestClaimMaintenanceIsBoundedByN(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1, Lease: 20 * time.Millisecond})
	ctx := testContext(t)
	// Claimed for an hour: the claims of the test do not expire.
	patient := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, MaxAttempts: 1, Lease: time.Hour})
	mustEnqueue(t, b.q, "a", "b", "c", "d", "e")
	lost := mustClaim(t, b.q, 5, 5) // their last attempt: they expire to the dead letters
	for range 5 {
		if _, _, err := b.q.EnqueueWith(ctx, []byte("delayed"), queue.EnqueueOptions{Delay: 30 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	untilRedisTime(t, b.rdb, lost[0].Deadline.Add(30*time.Millisecond))
	wantMaintained(t, mustClaimDetailed(t, patient, 2), 2, 2, 2, true)
	wantMaintained(t, mustClaimDetailed(t, patient, 2), 2, 2, 2, true)
	wantMaintained(t, mustClaimDetailed(t, patient, 2), 1, 1, 1, false)
	wantCounts(t, b.q, queue.Depth{Leased: 5, Dead: 5})

	// Only dead letters to make: nothing to claim, and More all the same.
	mustEnqueue(t, b.q, "f", "g", "h")
	lost = mustClaim(t, b.q, 3, 3)
	untilRedisTime(t, b.rdb, lost[0].Deadline)
	wantMaintained(t, mustClaimDetailed(t, patient, 2), 0, 2, 0, true)
	wantMaintained(t, mustClaimDetailed(t, patient, 2), 0, 1, 0, false)
	wantCounts(t, b.q, queue.Depth{Leased: 5, Dead: 8})
}

// With nothing due or expired, a claim's maintenance is three reads: a
// ZRANGEBYSCORE of the leases, one of the delayed items (only if there
// are any), and the LINDEX of the results' expiry list; an empty poll
// writes nothing.
func TestIdleClaimMaintenanceCostsThreeReads(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	mustEnqueue(t, b.q, "running", "done")
	items := mustClaim(t, b.q, 2, 2) // a live lease, and a result
	if err := b.q.Ack(ctx, items[1], []byte("r")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.q.EnqueueWith(ctx, []byte("later"), queue.EnqueueOptions{Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := b.srv.CommandStats(t)
	wantMaintained(t, mustClaimDetailed(t, b.q, 100), 0, 0, 0, false)
	after := b.srv.CommandStats(t)
	got := map[string]int64{}
	for cmd, n := range after {
		// Each reading's own connection says HELLO, INFO and (Redis 7.2+,
		// Valkey) CLIENT SETINFO.
		if d := n - before[cmd]; d != 0 && cmd != "info" && cmd != "hello" && cmd != "client|setinfo" {
			got[cmd] = d
		}
	}
	want := map[string]int64{"evalsha": 1, "time": 1, "exists": 1, "zrangebyscore": 2, "lindex": 1, "llen": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("an idle claim ran %v, want %v", got, want)
	}
	wantCounts(t, b.q, queue.Depth{Leased: 1, Delayed: 1})
}
