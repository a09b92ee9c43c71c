package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// Every script runs on a 3-master cluster: each case gets its own queue,
// so the cases land on different slots and masters.
func TestEveryScriptOnCluster(t *testing.T) {
	t.Parallel()
	cc := redistest.StartCluster(t).Client(t)
	fast := queue.Config{Lease: 10 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2}
	cases := []struct {
		name string
		run  func(t *testing.T, q *queue.Queue)
	}{
		{"enqueue-claim-ack-result-value", func(t *testing.T, q *queue.Queue) {
			ctx := testContext(t)
			ids := mustEnqueue(t, q, "a", "b")
			if v, err := q.Value(ctx, ids[1]); string(v) != "b" || err != nil {
				t.Fatalf("Value = %q, %v", v, err)
			}
			items := mustClaim(t, q, 5, 2)
			if s, err := q.Settle(ctx, queue.Settlement{Item: items[0], Result: []byte("ra")}, queue.Settlement{Item: items[1], Result: []byte("rb")}); s.Acked != 2 || err != nil {
				t.Fatalf("Settle = %+v, %v", s, err)
			}
			if r, err := q.Result(ctx, ids[1]); string(r) != "rb" || err != nil {
				t.Fatalf("Result = %q, %v", r, err)
			}
			wantCounts(t, q, queue.Depth{})
		}},
		{"nack-promote-dead-requeue-purge", func(t *testing.T, q *queue.Queue) {
			ctx := testContext(t)
			id := mustEnqueue(t, q, "x")[0]
			if err := q.Nack(ctx, mustClaim(t, q, 1, 1)[0], errors.New("one")); err != nil {
				t.Fatal(err)
			}
			testrig.Eventually(t, 5*time.Second, "promoted", func() bool { n, err := qstore.Of(q).Promote(ctx, 10); return n == 1 && err == nil })
			if err := q.Nack(ctx, mustClaim(t, q, 1, 1)[0], errors.New("two")); err != nil {
				t.Fatal(err)
			}
			if dead, err := testrig.DeadLetters(ctx, q, 10); len(dead) != 1 || dead[0].ID != id || dead[0].Cause != "two" || err != nil {
				t.Fatalf("Dead = %+v, %v", dead, err)
			}
			if n, err := qstore.Of(q).RequeueDead(ctx, 10); n != 1 || err != nil {
				t.Fatalf("RequeueDead = %d, %v", n, err)
			}
			if err := q.Nack(ctx, mustClaim(t, q, 1, 1)[0], errors.New("three")); err != nil {
				t.Fatal(err)
			}
			testrig.Eventually(t, 5*time.Second, "promoted", func() bool { n, err := qstore.Of(q).Promote(ctx, 10); return n == 1 && err == nil })
			if err := q.Nack(ctx, mustClaim(t, q, 1, 1)[0], errors.New("four")); err != nil {
				t.Fatal(err)
			}
			if n, err := qstore.Of(q).PurgeDead(ctx, 10); n != 1 || err != nil {
				t.Fatalf("PurgeDead = %d, %v", n, err)
			}
			wantCounts(t, q, queue.Depth{})
		}},
		{"tidy-extend-release-stats", func(t *testing.T, q *queue.Queue) {
			ctx := testContext(t)
			mustEnqueue(t, q, "a", "b", "c")
			items := mustClaim(t, q, 3, 3)
			if _, err := q.Extend(ctx, items[0], time.Minute); err != nil {
				t.Fatal(err)
			}
			if n, err := q.Release(ctx, items[1]); n != 1 || err != nil {
				t.Fatalf("Release = %d, %v", n, err)
			}
			untilRedisTime(t, cc, items[2].Deadline.Add(time.Millisecond))
			if n, err := qstore.Of(q).Tidy(ctx, 10); n != 1 || err != nil {
				t.Fatalf("Tidy = %d, %v; want 1 (c)", n, err)
			}
			wantCounts(t, q, queue.Depth{Pending: 2, Leased: 1})
			if s := mustDepth(t, q); s.OldestPending < 0 || s.OldestPending > time.Minute {
				t.Fatalf("OldestPending = %v", s.OldestPending)
			}
		}},
		{"enqueue-with-options", func(t *testing.T, q *queue.Queue) {
			ctx := testContext(t)
			key := queue.EnqueueOptions{Unique: "u", UniqueFor: time.Minute, MaxAttempts: 1}
			first := mustEnqueueWith(t, q, "a", key, false)
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if id, dup, err := q.EnqueueWith(ctx, []byte("b"), key); id != first || !dup || err != nil {
						t.Errorf("EnqueueWith = %s, %v, %v; want %s, a duplicate", id, dup, err, first)
					}
				})
			}
			wg.Wait()
			later := mustEnqueueWith(t, q, "later", queue.EnqueueOptions{Delay: 20 * time.Millisecond}, false)
			it := mustClaim(t, q, 5, 1)[0]
			if err := q.Nack(ctx, it, errors.New("once")); err != nil { // its own MaxAttempts 1: dead
				t.Fatal(err)
			}
			if again := mustEnqueueWith(t, q, "c", key, false); again == first {
				t.Fatal("the dead item still holds its unique key")
			}
			testrig.Eventually(t, 5*time.Second, "promoted", func() bool { n, err := qstore.Of(q).Promote(ctx, 10); return n == 1 && err == nil })
			if items := mustClaim(t, q, 5, 2); items[0].ID == later || items[1].ID != later {
				t.Fatalf("claimed %+v, want the unique one, then %s", items, later)
			}
			wantCounts(t, q, queue.Depth{Leased: 2, Dead: 1})
		}},
		{"join-with-options", func(t *testing.T, q *queue.Queue) {
			// A join is package tasks' fan-out: its scripts are the
			// storage's, reached as tasks reaches them.
			ctx := testContext(t)
			st := qstore.Of(q)
			opts := qstore.EnqueueOptions{Delay: 20 * time.Millisecond, MaxAttempts: 1, Unique: "j", UniqueFor: time.Minute}
			ids := make([]string, 20)
			var added atomic.Int64
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					id, dup, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", 2), Final: []byte("f"), Options: opts})
					if err != nil {
						t.Error(err)
					}
					if !dup {
						added.Add(1)
					}
					ids[i] = id
				})
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] || added.Load() != 1 {
					t.Fatalf("20 EnqueueJoin under one key: %d added, ids %v", added.Load(), ids)
				}
			}
			join := ids[0]
			promoted := 0
			testrig.Eventually(t, 5*time.Second, "children promoted", func() bool {
				n, err := qstore.Of(q).Promote(ctx, 10)
				promoted += n
				return promoted == 2 && err == nil
			})
			items := mustClaim(t, q, 5, 2)
			for _, it := range items {
				if it.MaxAttempts != 1 {
					t.Fatalf("claimed %s with MaxAttempts %d, want the join's 1", it.ID, it.MaxAttempts)
				}
			}
			if s, err := q.Settle(ctx, queue.Settlement{Item: items[0]}, queue.Settlement{Item: items[1], Err: errors.New("once")}); s.Acked != 1 || s.Dead != 1 || err != nil {
				t.Fatalf("Settle = %+v, %v; want the nacked child dead at its join's limit", s, err)
			}
			if _, err := q.Wait(ctx, join); !errors.Is(err, queue.ErrDead) {
				t.Fatalf("Wait of the failed join = %v, want ErrDead", err)
			}
			if id, dup, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("d", 1), Final: []byte("f"), Options: opts}); id != join || !dup || err != nil {
				t.Fatalf("EnqueueJoin under the failed join's key = %s, %v, %v; want %s, a duplicate", id, dup, err, join)
			}
			if n, err := qstore.Of(q).RequeueDead(ctx, 10); n != 1 || err != nil {
				t.Fatalf("RequeueDead = %d, %v", n, err)
			}
			for _, want := range []string{items[1].ID, join} { // the child, then the final item
				it := mustClaim(t, q, 5, 1)[0]
				if it.ID != want || it.MaxAttempts != 1 {
					t.Fatalf("claimed %s with MaxAttempts %d, want %s with 1", it.ID, it.MaxAttempts, want)
				}
				if err := q.Ack(ctx, it, []byte("r")); err != nil {
					t.Fatal(err)
				}
			}
			if r, err := q.Wait(ctx, join); string(r) != "r" || err != nil {
				t.Fatalf("Wait = %q, %v", r, err)
			}
			if id, dup, err := st.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("e", 1), Final: []byte("f"), Options: opts}); id == join || dup || err != nil {
				t.Fatalf("EnqueueJoin after the join ended = %s, %v, %v; want a new join", id, dup, err)
			}
			// Not wantCounts: Due counts the new child once its 20ms pass.
			if d := mustDepth(t, q); d.Delayed != 1 || d.Pending != 0 || d.Leased != 0 || d.Dead != 0 {
				t.Fatalf("Depth = %+v, want the new join's child delayed, nothing else", d)
			}
		}},
		{"wait-and-malformed", func(t *testing.T, q *queue.Queue) {
			ctx := testContext(t)
			id := mustEnqueue(t, q, "q")[0]
			if err := cc.LPush(ctx, tagOf(q)+":pending", "ghost").Err(); err != nil {
				t.Fatal(err)
			}
			done := make(chan waitResult, 1)
			go func() { r, err := q.Wait(ctx, id); done <- waitResult{result: r, err: err} }()
			clusterBlocked(t, cc, 1) // so BLMOVE runs on the cluster too
			items := mustClaim(t, q, 2, 1)
			if err := q.Ack(ctx, items[0], []byte("a")); err != nil {
				t.Fatal(err)
			}
			if r := receive(t, done); string(r.result) != "a" || r.err != nil {
				t.Fatalf("Wait = %q, %v", r.result, r.err)
			}
			mustClaim(t, q, 2, 0)
			wantCounts(t, q, queue.Depth{Dead: 1})
		}},
	}
	nodes := map[int]bool{}
	for _, tc := range cases {
		q := newQueue(t, cc, tc.name, fast)
		slot, err := cc.ClusterKeySlot(context.Background(), tagOf(q)).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[min(int(slot)/5461, 2)] = true // the masters hold 0-5460, 5461-10922, 10923-16383
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, q)
		})
	}
	if len(nodes) < 2 {
		t.Errorf("all cases hashed to one master; rename them to spread the slots")
	}
}

// clusterBlocked waits until the cluster's masters report n clients in a
// blocking call between them.
func clusterBlocked(t *testing.T, cc *redis.ClusterClient, n int) {
	t.Helper()
	testrig.Eventually(t, 10*time.Second, "blocked clients on the cluster", func() bool {
		var total atomic.Int64
		err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			info, err := m.Info(ctx, "clients").Result()
			for line := range strings.Lines(info) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
					b, _ := strconv.Atoi(v)
					total.Add(int64(b))
				}
			}
			return err
		})
		return err == nil && total.Load() == int64(n)
	})
}

func payloads(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, i+1)
	}
	return out
}
