package qstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// The previous release's by-id retry and run-now pushed an item of a
// priority to the default lane, its lanes field kept. While a deploy
// rolls, this release reads such an item as before: claimed once from
// where it is, back to its own lane on a retry, forgotten by the lanes
// hash on its ack.
func TestItemLeftInTheDefaultLaneByThePreviousRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: 1, BackoffMax: 1})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"critical": 100}); err != nil {
		t.Fatal(err)
	}
	id := mustEnqueueWith(t, b.q, "c", qstore.EnqueueOptions{Priority: "critical"}, false)
	tag := tagOf(b.q)
	// What the previous release's admin_requeue.lua and admin_promote.lua
	// left: the id in pending, its priority still in the lanes hash.
	if err := b.rdb.LMove(ctx, tag+":pending:critical", tag+":pending", "RIGHT", "LEFT").Err(); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 1})
	it := mustClaim(t, b.q, 10, 1)[0]
	if it.ID != id {
		t.Fatalf("claimed %s, want %s", it.ID, id)
	}
	if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
		t.Fatal(err)
	}
	promoteDue(t, b, id)
	if n, err := b.rdb.LLen(ctx, tag+":pending:critical").Result(); n != 1 || err != nil {
		t.Fatalf("critical lane holds %d (%v) after the retry, want 1", n, err)
	}
	it = mustClaim(t, b.q, 10, 1)[0]
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{})
	if n := itemFields(t, b.rdb, tag+":lanes"); n != 0 {
		t.Fatalf("lanes holds %d items after the ack, want 0", n)
	}
}

// fate is what the mixed-release test does with an item it claims.
type fate int

const (
	ackAtOnce     fate = iota
	nackFirst          // nacked at its first attempt, acked at its second
	nackAlways         // nacked until it is dead, acked once requeued
	abandonOnce        // its first lease left to expire, then acked
	releaseOnce        // released at its first claim, then acked
	extendThenAck      // its lease extended, then acked
	snoozeTwice        // snoozed by this release at its first two claims, then acked
	deadNow            // dead-lettered by this release at its first claim, acked once requeued
	fates
)

// held is what the mixed-release test knows of an item.
type held struct {
	fate     fate
	attempt  int       // of its last claim
	deadline time.Time // of its last claim
	released bool      // by its last claim's holder
	snoozes  int       // by this release, which leave its attempt uncounted
	snoozed  bool      // its last claim's holder snoozed it
	live     bool      // its last lease was left to expire
	once     bool      // its fate's first act is done
	acked    int
	ackedBy  string // the release whose ack applied
	requeued bool
	trace    string // its trace context, enqueued by this release
}

// A rolling deploy: processes of the previous release (its scripts, in
// testdata/previous) and of this one work one queue, each call made by
// one or the other, drawn at random. Nothing is lost, nothing runs twice
// (no item is claimed while its lease is live, or after its ack), and
// nothing is dead-lettered but what failed its every attempt, or this
// release dead-lettered at once; a dead letter requeued by either release
// runs again. An item snoozed by this release keeps its attempt whichever
// release claims it next, and the previous release, which knows no
// snoozes, acks it as any item. With priorities, the claims take
// claimtyped.lua's path. This release's enqueues carry trace contexts,
// which the previous release ignores: its claims return none, its acks
// leave them to expire (7 days), this release's acks delete them.
func TestPreviousReleaseBesideThisOne(t *testing.T) {
	// Not parallel: it swaps the scripts of every Store of the process,
	// which the parallel tests wait for.
	for _, prioritized := range []bool{false, true} {
		t.Run(fmt.Sprintf("priorities=%v", prioritized), func(t *testing.T) {
			previous, this := qstore.Releases()
			defer this()
			rng := rand.New(rand.NewPCG(37, 7))
			release := ""
			pick := func() string {
				if rng.IntN(2) == 0 {
					previous()
					release = "previous"
				} else {
					this()
					release = "this"
				}
				return release
			}
			const lease = 150 * time.Millisecond
			b := setup(t, queue.Config{MaxAttempts: 3, Lease: lease, BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond})
			ctx := testContext(t)
			priority := ""
			if prioritized {
				pick()
				if err := b.q.SetPriorities(ctx, map[string]int{"high": 3}); err != nil {
					t.Fatal(err)
				}
				priority = "high"
			}

			items := map[string]*held{}
			for i := 0; i < 60; i += 4 {
				var opts qstore.EnqueueOptions
				if i%8 == 4 {
					opts = qstore.EnqueueOptions{MaxAttempts: 2, Delay: time.Millisecond, Priority: priority}
				}
				// Only this release's Go sends a trace context.
				traceOf := func() string {
					if release == "this" {
						return fmt.Sprintf("00-0af7651916cd43dd8448eb211c80319c-%016x-01", i+1)
					}
					return ""
				}
				pick()
				opts.Trace = traceOf()
				ids, err := b.q.EnqueueBatchWith(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")}, opts)
				if err != nil || len(ids) != 3 {
					t.Fatalf("EnqueueBatchWith (%s release) = %v, %v", release, ids, err)
				}
				for j, id := range ids {
					items[id] = &held{fate: fate(i+j) % fates, trace: opts.Trace}
				}
				pick()
				opts.Unique, opts.UniqueFor, opts.Trace = fmt.Sprintf("u%d", i), time.Minute, traceOf()
				id := mustEnqueueWith(t, b.q, "d", opts, false)
				items[id] = &held{fate: fate(i+3) % fates, trace: opts.Trace}
			}

			// Pairs of the releases that claimed and settled one lease.
			pairs := map[[2]string]int{}
			// Claims of snoozed items, by release.
			afterSnooze := map[string]int{}
			claimAll := func() {
				t.Helper()
				for until := time.Now().Add(20 * time.Second); ; {
					claimedBy := pick()
					c, err := b.q.ClaimDetailed(ctx, 5)
					if err != nil {
						t.Fatalf("Claim (%s release): %v", claimedBy, err)
					}
					for _, it := range c.Items {
						h := items[it.ID]
						switch {
						case h == nil:
							t.Fatalf("claimed %s, never enqueued", it.ID)
						case h.acked > 0:
							t.Fatalf("claimed %s (%s release) after its ack: runs twice", it.ID, claimedBy)
						case h.live && it.Deadline.Add(-lease).Before(h.deadline):
							t.Fatalf("claimed %s (%s release) at %v, inside its last lease (to %v): runs twice", it.ID, claimedBy, it.Deadline.Add(-lease), h.deadline)
						}
						if wantTrace := map[string]string{"this": h.trace}[claimedBy]; it.Trace != wantTrace {
							t.Fatalf("claimed %s (%s release) with trace %q, want %q", it.ID, claimedBy, it.Trace, wantTrace)
						}
						want := h.attempt + 1
						if h.released || h.snoozed {
							want = h.attempt // a release or a snooze does not count the attempt
						}
						if it.Attempt != want {
							t.Fatalf("claimed %s (%s release) at attempt %d, want %d", it.ID, claimedBy, it.Attempt, want)
						}
						if h.snoozed {
							afterSnooze[claimedBy]++
						}
						h.attempt, h.deadline, h.released, h.live, h.snoozed = it.Attempt, it.Deadline, false, false, false
						settledBy := pick()
						steered := h.fate == snoozeTwice && h.snoozes < 2 || h.fate == deadNow && !h.requeued
						if steered { // only this release steers
							this()
							settledBy, release = "this", "this"
						}
						pairs[[2]string{claimedBy, settledBy}]++
						var err error
						switch {
						case h.fate == nackFirst && it.Attempt == 1, h.fate == nackAlways && !h.requeued:
							err = b.q.Nack(ctx, it, errors.New("not yet"))
						case h.fate == snoozeTwice && steered:
							err = b.q.Nack(ctx, it, qstore.NewVerdict(qstore.Snooze, time.Millisecond, nil))
							h.snoozes++
							h.snoozed = true
						case h.fate == deadNow && steered:
							err = b.q.Nack(ctx, it, fmt.Errorf("at once: %w", qstore.NewVerdict(qstore.DeadNow, 0, errors.New("now"))))
						case h.fate == abandonOnce && it.Attempt == 1:
							h.live = true
							continue
						case h.fate == releaseOnce && !h.once:
							h.once = true
							var n int
							n, err = b.q.Release(ctx, it)
							if n != 1 {
								t.Fatalf("Release %s (%s release) = %d, %v", it.ID, settledBy, n, err)
							}
							h.released = true
						default:
							if h.fate == extendThenAck {
								if _, err = b.q.Extend(ctx, it, time.Second); err != nil {
									break
								}
								pick()
							}
							if err = b.q.Ack(ctx, it, []byte("r"+it.ID)); err == nil {
								h.acked++
								h.ackedBy = release
							}
						}
						if err != nil {
							t.Fatalf("settling %s at attempt %d (%s release): %v", it.ID, it.Attempt, release, err)
						}
					}
					if len(c.Items) == 0 {
						d := mustDepth(t, b.q)
						if d.Pending == 0 && d.Leased == 0 && d.Delayed == 0 {
							return
						}
						if time.Now().After(until) {
							t.Fatalf("the queue does not drain: %+v", d)
						}
						untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(5*time.Millisecond))
					}
				}
			}
			claimAll()

			// Dead: the items nacked at every attempt, or dead-lettered at
			// once, none other.
			pick()
			dead, _, err := b.q.List(ctx, qstore.StateDead, 0, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dead {
				h := items[d.ID]
				switch {
				case h == nil || h.fate != nackAlways && h.fate != deadNow:
					t.Errorf("dead letter %s (%+v): dead-lettered by the skew", d.ID, d)
				case h.fate == nackAlways && (d.Attempts != h.attempt || d.Cause != "not yet"):
					t.Errorf("dead letter %s: %d attempts, cause %q; want %d, %q", d.ID, d.Attempts, d.Cause, h.attempt, "not yet")
				case h.fate == deadNow && (d.Attempts != 1 || d.Cause != "at once: now"):
					t.Errorf("dead letter %s: %d attempts, cause %q; want 1, %q", d.ID, d.Attempts, d.Cause, "at once: now")
				}
			}
			for id, h := range items {
				if h.fate == nackAlways || h.fate == deadNow {
					h.requeued, h.attempt = true, 0
					if !slices.ContainsFunc(dead, func(d qstore.ItemInfo) bool { return d.ID == id }) {
						t.Errorf("%s (fate %d) is not dead", id, h.fate)
					}
				}
			}
			for requeued := 0; requeued < len(dead); {
				pick()
				n, err := b.q.RequeueDead(ctx, 1+rng.IntN(3))
				if err != nil {
					t.Fatalf("RequeueDead (%s release): %v", release, err)
				}
				requeued += n
			}
			claimAll()

			// The snooze counts left are those of items the previous release
			// acked (it knows no snoozes): the hash expires with them.
			left, err := b.rdb.HKeys(ctx, tagOf(b.q)+":snoozes").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range left {
				if h := items[id]; h == nil || h.fate != snoozeTwice {
					t.Errorf("snoozes holds %s, never snoozed", id)
				}
			}
			traced := map[[2]string]int{}
			for id, h := range items {
				if h.fate == snoozeTwice && h.snoozes != 2 {
					t.Errorf("%s snoozed %d times, want 2", id, h.snoozes)
				}
				if h.acked != 1 {
					t.Errorf("%s (fate %d) acked %d times, want once", id, h.fate, h.acked)
				}
				if h.trace != "" {
					traced[[2]string{"this", h.ackedBy}]++
					key := tagOf(b.q) + ":trace:" + id
					ttl := b.rdb.PTTL(ctx, key).Val()
					switch {
					case h.ackedBy == "this" && ttl != -2:
						t.Errorf("%s, acked by this release, keeps its trace context (ttl %v)", id, ttl)
					case h.ackedBy == "previous" && (ttl <= 0 || ttl > 7*24*time.Hour+time.Millisecond):
						t.Errorf("%s, acked by the previous release: its trace context expires in %v, want within 7 days", id, ttl)
					}
				}
				pick()
				if r, err := b.q.Result(ctx, id); string(r) != "r"+id || err != nil {
					t.Errorf("Result(%s) (%s release) = %q, %v", id, release, r, err)
				}
			}
			pick()
			wantCounts(t, b.q, qstore.Depth{})
			if afterSnooze["previous"] == 0 || afterSnooze["this"] == 0 {
				t.Errorf("claims of snoozed items by release: %v; want some by each", afterSnooze)
			}
			for _, pair := range [][2]string{{"previous", "this"}, {"this", "previous"}} {
				if pairs[pair] == 0 {
					t.Errorf("no lease claimed by the %s release was settled by the %s one", pair[0], pair[1])
				}
				if traced[[2]string{"this", pair[1]}] == 0 {
					t.Errorf("no item traced by this release was acked by the %s one", pair[1])
				}
			}
		})
	}
}
