package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// weights100to1 are the priorities of the tests below: a critical item
// among 200 default ones is claimed first, or close to it.
var weights100to1 = map[string]int{"critical": 100, "default": 1}

// Every verb that makes an item pending puts it in its priority's lane,
// whichever door it comes in by (the maintenance jobs', or the
// operators' that the CLI and the dashboard make): a critical item made
// pending behind 200 default ones is claimed within the first 5 of 201.
func TestMakePendingKeepsPriority(t *testing.T) {
	t.Parallel()
	// Each verb gets its queue with a critical item in the state the verb
	// acts on, made before the 200 default items, and makes it pending.
	verbs := []struct {
		name  string
		cfg   queue.Config
		place func(ctx context.Context, t *testing.T, q *queue.Queue) string
		act   func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error)
	}{
		{"inspect.RetryDead", queue.Config{}, dieCritical,
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return b.in.RetryDead(ctx, q.Name(), id)
			}},
		{"inspect.RetryAllDead", queue.Config{}, dieCritical,
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return b.in.RetryAllDead(ctx, q.Name(), 0)
			}},
		{"inspect.RetryAllDead max", queue.Config{}, dieCritical,
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return b.in.RetryAllDead(ctx, q.Name(), 10)
			}},
		{"inspect.RunDelayed", queue.Config{}, delayCritical(time.Hour),
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return b.in.RunDelayed(ctx, q.Name(), id)
			}},
		{"jobs.PromoteDue", queue.Config{}, delayCritical(time.Millisecond),
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return runUntilItems(ctx, t, "the delayed item due", func() (recruiter.Job, error) { return jobs.PromoteDue(q, jobs.PromoteConfig{}) })
			}},
		{"jobs.TidyStale", queue.Config{Lease: time.Millisecond}, leaseCritical,
			func(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue, id string) (int, error) {
				return runUntilItems(ctx, t, "the lease expired", func() (recruiter.Job, error) { return jobs.TidyStale(q, jobs.TidyConfig{}) })
			}},
	}
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := testrig.Context(t, 30*time.Second)
			q := b.queue(t, "lanes", v.cfg)
			if err := q.SetPriorities(ctx, weights100to1); err != nil {
				t.Fatal(err)
			}
			id := v.place(ctx, t, q)
			payloads := make([][]byte, 200)
			for i := range payloads {
				payloads[i] = fmt.Appendf(nil, "default %d", i)
			}
			if _, err := q.EnqueueBatch(ctx, payloads); err != nil {
				t.Fatal(err)
			}
			if n, err := v.act(ctx, t, b, q, id); n != 1 || err != nil {
				t.Fatalf("%s = %d, %v; want 1", v.name, n, err)
			}
			for claim := 1; claim <= 201; claim++ {
				items, err := q.Claim(ctx, 1)
				if err != nil || len(items) != 1 {
					t.Fatalf("claim %d = %v, %v", claim, items, err)
				}
				if items[0].ID != id {
					continue
				}
				if claim > 5 {
					t.Fatalf("after %s claim %d of 201 took the critical item, want one of the first 5", v.name, claim)
				}
				return
			}
			t.Fatalf("after %s the critical item was not claimed", v.name)
		})
	}
}

// runUntilItems runs slices of the job that newJob makes until one
// handles an item, and returns that slice's count.
func runUntilItems(ctx context.Context, t *testing.T, what string, newJob func() (recruiter.Job, error)) (n int, err error) {
	t.Helper()
	job, err := newJob()
	if err != nil {
		return 0, err
	}
	testrig.Eventually(t, 10*time.Second, what, func() bool {
		var rep recruiter.Report
		rep, err = job.Run(ctx)
		n = rep.Items
		return n != 0 || err != nil
	})
	return n, err
}

// dieCritical makes a critical item a dead letter: its one attempt
// failed.
func dieCritical(ctx context.Context, t *testing.T, q *queue.Queue) string {
	t.Helper()
	ids := deadCritical(ctx, t, q, 1)
	return ids[0]
}

// delayCritical enqueues a critical item with delay d.
func delayCritical(d time.Duration) func(ctx context.Context, t *testing.T, q *queue.Queue) string {
	return func(ctx context.Context, t *testing.T, q *queue.Queue) string {
		t.Helper()
		id, _, err := q.EnqueueWith(ctx, []byte("critical"), queue.EnqueueOptions{Priority: "critical", Delay: d})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
}

// leaseCritical enqueues a critical item and claims it.
func leaseCritical(ctx context.Context, t *testing.T, q *queue.Queue) string {
	t.Helper()
	id, _, err := q.EnqueueWith(ctx, []byte("critical"), queue.EnqueueOptions{Priority: "critical"})
	if err != nil {
		t.Fatal(err)
	}
	if items, err := q.Claim(ctx, 1); err != nil || len(items) != 1 || items[0].ID != id {
		t.Fatalf("Claim = %v, %v; want %s", items, err, id)
	}
	return id
}

// deadCritical makes n critical items dead letters, each after its one
// attempt failed, and returns their ids.
func deadCritical(ctx context.Context, t *testing.T, q *queue.Queue, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		var err error
		ids[i], _, err = q.EnqueueWith(ctx, fmt.Appendf(nil, "critical %d", i), queue.EnqueueOptions{Priority: "critical", MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
	}
	items, err := q.Claim(ctx, n)
	if err != nil || len(items) != n {
		t.Fatalf("Claim(%d) = %d items, %v", n, len(items), err)
	}
	for _, it := range items {
		if err := q.Nack(ctx, it, errors.New("handler failed")); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := q.Depth(ctx); err != nil || d.Dead != int64(n) {
		t.Fatalf("Depth = %+v, %v; want %d dead", d, err, n)
	}
	return ids
}

// A purge deletes every trace of the items it purges, by whichever door:
// every key of the queue is back to the type and size it had before they
// were enqueued.
func TestPurgeLeavesNoTrace(t *testing.T) {
	t.Parallel()
	verbs := []struct {
		name  string
		purge func(ctx context.Context, b *bundle, q *queue.Queue, ids []string) (int, error)
	}{
		{"inspect.PurgeDead", func(ctx context.Context, b *bundle, q *queue.Queue, ids []string) (int, error) {
			return b.in.PurgeDead(ctx, q.Name(), ids...)
		}},
		{"inspect.PurgeAllDead", func(ctx context.Context, b *bundle, q *queue.Queue, ids []string) (int, error) {
			return b.in.PurgeAllDead(ctx, q.Name(), 0)
		}},
		{"inspect.PurgeAllDead max", func(ctx context.Context, b *bundle, q *queue.Queue, ids []string) (int, error) {
			return b.in.PurgeAllDead(ctx, q.Name(), 100)
		}},
	}
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := testrig.Context(t, 30*time.Second)
			q := b.queue(t, "purged", queue.Config{})
			if err := q.SetPriorities(ctx, weights100to1); err != nil {
				t.Fatal(err)
			}
			// One item through the same life first, so that what a queue
			// keeps for good once used (the hashes' encoding pins, the
			// lanes' credits, the claims' counter) is there before.
			deadCritical(ctx, t, q, 1)
			if n, err := b.in.PurgeAllDead(ctx, q.Name(), 0); n != 1 || err != nil {
				t.Fatalf("PurgeDead of the first = %d, %v", n, err)
			}
			before := queueKeys(ctx, t, b, q)
			ids := deadCritical(ctx, t, q, 50)
			if n, err := v.purge(ctx, b, q, ids); n != 50 || err != nil {
				t.Fatalf("%s = %d, %v; want 50", v.name, n, err)
			}
			after := queueKeys(ctx, t, b, q)
			keys := slices.Sorted(maps.Keys(before))
			for key := range after {
				if _, ok := before[key]; !ok {
					keys = append(keys, key)
				}
			}
			for _, key := range keys {
				if after[key] != before[key] {
					t.Errorf("after %s of 50 dead letters, %s is %q, want %q as before they were enqueued (\"\": no key)", v.name, key, after[key], before[key])
				}
			}
		})
	}
}

// queueKeys maps every key of q to its type and size (a string's size
// is 1: the claims' counter counts on).
func queueKeys(ctx context.Context, t *testing.T, b *bundle, q *queue.Queue) map[string]string {
	t.Helper()
	out := map[string]string{}
	iter := b.rdb.Scan(ctx, 0, "{"+b.prefix+":q:"+q.Name()+"}*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		typ, err := b.rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		switch typ {
		case "hash":
			n, err = b.rdb.HLen(ctx, key).Result()
		case "list":
			n, err = b.rdb.LLen(ctx, key).Result()
		case "set":
			n, err = b.rdb.SCard(ctx, key).Result()
		case "zset":
			n, err = b.rdb.ZCard(ctx, key).Result()
		default:
			n = 1
		}
		if err != nil {
			t.Fatal(err)
		}
		out[key] = fmt.Sprintf("%s %d", typ, n)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
