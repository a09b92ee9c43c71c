package rolling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/tasks"
)

// TestPreviousReleaseMuxBesideThisOne runs the previous release's
// tasks.Mux and Client, built from git, on one queue with this release's,
// in three directions: tasks this release enqueues (traced) that the
// previous release runs, and whose held-back retries this one runs; tasks
// the previous release enqueues that this one runs, snoozing or retrying
// some, whose second runs the previous release makes; and a mixed set
// that both enqueue and run at once. Every task must succeed exactly once
// with the right result, whichever release ran which attempt, and nothing
// may be left in the queue, dead-lettered, or kept past a week.
func TestPreviousReleaseMuxBesideThisOne(t *testing.T) {
	r := newRig(t)
	ctx := testrig.Context(t, 100*time.Second)

	t.Run("EnqueuedByThisRunByPrevious", func(t *testing.T) {
		r.t = t
		mixes := mixOf("a.")
		ids := r.enqueue(ctx, mixes)
		if n := len(r.traceKeys(ctx)); n == 0 {
			t.Fatal("this release's traced enqueues stored no trace context: the test would not show the previous release reading past them")
		} else {
			t.Logf("%d trace contexts stored by this release's enqueues", n)
		}
		start := time.Now()
		log := r.previous(ctx, "a-previous", previousSpec{Do: "run", Until: "idle"})
		t.Logf("the previous release ran all it could in %v (held back: %v)", time.Since(start).Round(time.Millisecond), hold)
		if err := r.runThis(ctx, "empty"); err != nil {
			t.Fatal(err)
		}
		r.check(ctx, mixes, ids, r.runsByK(log), "previous", "this")
	})

	t.Run("EnqueuedByPreviousRunByThis", func(t *testing.T) {
		r.t = t
		mixes := mixOf("b.")
		ids := enqueued(t, r.previous(ctx, "b-enqueue", previousSpec{Do: "enqueue", Tasks: mixes}))
		start := time.Now()
		if err := r.runThis(ctx, "idle"); err != nil {
			t.Fatal(err)
		}
		t.Logf("this release ran all it could in %v (held back: %v)", time.Since(start).Round(time.Millisecond), hold)
		log := r.previous(ctx, "b-previous", previousSpec{Do: "run", Until: "empty"})
		r.check(ctx, mixes, ids, r.runsByK(log), "this", "previous")
	})

	t.Run("MixedSetBothRunning", func(t *testing.T) {
		r.t = t
		ours, theirs := mixOf("c."), mixOf("d.")
		ids := enqueued(t, r.previous(ctx, "c-enqueue", previousSpec{Do: "enqueue", Tasks: theirs}))
		for k, id := range r.enqueue(ctx, ours) {
			ids[k] = id
		}
		// Each run takes a while in both releases, so that neither drains
		// the set alone before the other claims (without it, the previous
		// release ran all of it about one time in four).
		r.mu.Lock()
		r.pace = runPace
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.pace = 0
			r.mu.Unlock()
		}()
		done := r.startPrevious(ctx, "c-previous", previousSpec{Do: "run", Until: "empty", Pace: runPace})
		// This release, in-process, claims faster than the previous one
		// starts: it waits for the previous release's first run.
		log := filepath.Join(r.dir, "c-previous.log")
		testrig.Eventually(t, 30*time.Second, "the previous release's first run", func() bool {
			data, _ := os.ReadFile(log)
			return strings.Contains(string(data), "R ")
		})
		if err := r.runThis(ctx, "empty"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mixes := append(ours, theirs...)
		byK := r.runsByK(log)
		r.check(ctx, mixes, ids, byK, "", "")
		by := map[string]int{}
		for k, rs := range byK {
			if strings.HasPrefix(k, "c.") || strings.HasPrefix(k, "d.") {
				for _, run := range rs {
					by[run.release]++
				}
			}
		}
		t.Logf("runs of the mixed set's tasks by release: %v", by)
		if by["previous"] == 0 || by["this"] == 0 {
			t.Errorf("one release ran nothing of the mixed set (%v): they did not run side by side", by)
		}
	})

	r.t = t
	r.checkTraces(ctx)
	t.Logf("%d spans exported by this release", len(r.spans.GetSpans()))
}

// check asserts that every task of mixes succeeded exactly once: one run
// per attempt, a second only where the first failed (or snoozed), with
// the right result, and that the queue holds nothing more. first and next
// name the releases that must have made a failing task's two runs ("":
// either).
func (r *rig) check(ctx context.Context, mixes []mix, ids map[string]string, byK map[string][]run, first, next string) {
	t := r.t
	t.Helper()
	uniques := map[string]string{} // unique key → the K that holds it
	checked, runs := 0, 0
	for _, m := range mixes {
		id := ids[m.K]
		if id == "" {
			t.Errorf("%s: no id from its enqueue", m.K)
			continue
		}
		type step struct {
			k, mode string
		}
		var ks []step
		switch m.Kind {
		case "plain":
			if holder, ok := uniques[m.Unique]; ok && m.Unique != "" {
				if id != ids[holder] {
					t.Errorf("%s: unique enqueue got id %s, not its holder %s's %s", m.K, id, holder, ids[holder])
				}
				if len(byK[m.K]) != 0 {
					t.Errorf("%s: a duplicate of a unique task ran: %+v", m.K, byK[m.K])
				}
				continue
			}
			uniques[m.Unique] = m.K
			ks = []step{{m.K, m.Mode}}
			var got string
			if raw, err := r.q.Result(ctx, id); err != nil {
				t.Errorf("%s: result of %s: %v", m.K, id, err)
			} else if err := json.Unmarshal(raw, &got); err != nil || got != "done:"+m.K {
				t.Errorf("%s: result %q (%v), want %q", m.K, raw, err, "done:"+m.K)
			}
		case "chain":
			ks = []step{{m.K + ".1", ""}, {m.K + ".2", m.Mode}, {m.K + ".3", ""}}
			p, err := tasks.ChainStatus(ctx, r.client, id)
			if err != nil || p.State != tasks.StateDone || string(p.Result) != "111" {
				t.Errorf("%s: chain %s: %+v (result %s), %v; want done with 111", m.K, id, p, p.Result, err)
			}
		case "fanout":
			ks = []step{{m.K + ".1", ""}, {m.K + ".2", m.Mode}, {m.K + ".3", ""}, {m.K + ".f", ""}}
			p, err := tasks.FanOutStatus(ctx, r.client, id)
			if err != nil || p.State != tasks.StateDone || p.Done != 3 || string(p.Result) != "1006" {
				t.Errorf("%s: fan-out %s: %+v (result %s), %v; want done, 3 children done, 1006", m.K, id, p, p.Result, err)
			}
		}
		for _, w := range ks {
			checked++
			rs := byK[w.k]
			runs += len(rs)
			want := 1
			if w.mode != "" {
				want = 2
			}
			if len(rs) != want {
				t.Errorf("%s (mode %q): %d runs, want %d: %+v", w.k, w.mode, len(rs), want, rs)
				continue
			}
			for i, run := range rs {
				if run.n != i+1 {
					t.Errorf("%s: runs numbered %+v", w.k, rs)
				}
			}
			if want == 1 {
				r.checkAttempt(w.k, rs[0], 1)
				continue
			}
			if first != "" && (rs[0].release != first || rs[1].release != next) {
				t.Errorf("%s (%s): first run by %s, next by %s; want %s then %s", w.k, w.mode, rs[0].release, rs[1].release, first, next)
			}
			// A snooze gives its attempt back; a failure, in either
			// release, uses it: this release must read the attempt
			// that the other one counted.
			wantNext := 2
			if w.mode == "snooze" && rs[0].release == "this" {
				wantNext = 1
			}
			r.checkAttempt(w.k, rs[1], wantNext)
		}
	}
	if r.lostLeases > 0 {
		t.Logf("%d runs came an attempt or more late: a claim whose reply was lost (a Redis call past its timeout on a loaded machine) leased its batch until the lease ended; see the logs", r.lostLeases)
	}
	d, err := r.q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Pending+d.Leased+d.Delayed+d.Dead+d.Parked != 0 {
		dead, _ := testrig.DeadLetters(ctx, r.q, 20)
		t.Errorf("the queue holds more: %+v; dead letters: %+v", d, dead)
	}
	t.Logf("%d tasks checked, %d runs", checked, runs)
}

// checkAttempt checks the attempt of a run by this release (the previous
// release cannot tell it): want, as counted by the releases that ran the
// task before. Fewer would mean this release lost count of the other's
// attempts. More happens when a claim's reply is lost (a call past its
// RedisTimeout on a loaded machine): its batch is leased until the lease
// ends, then claimed again with the next attempt; that is counted, not
// failed.
func (r *rig) checkAttempt(k string, got run, want int) {
	r.t.Helper()
	switch {
	case got.release != "this":
	case got.attempt < want:
		r.t.Errorf("%s: this release ran attempt %d, want %d (the runs before it: failed or snoozed in either release)", k, got.attempt, want)
	case got.attempt > want:
		r.lostLeases++
		r.t.Logf("%s: this release ran attempt %d, want %d: a lost claim's lease ended first", k, got.attempt, want)
	}
}

// traceKeys are the queue's trace-context keys.
func (r *rig) traceKeys(ctx context.Context) []string {
	r.t.Helper()
	keys, err := r.rdb.Keys(ctx, fmt.Sprintf("{%s:q:%s}:trace:*", prefix, queueName)).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	return keys
}

// checkTraces asserts that what this release stores beside tasks, and
// the previous release leaves behind when it acks them, expires: each
// trace context and the queue's traced marker within a week (and the
// longest delay) from now, the snooze counts too.
func (r *rig) checkTraces(ctx context.Context) {
	t := r.t
	t.Helper()
	tag := fmt.Sprintf("{%s:q:%s}", prefix, queueName)
	keys := append(r.traceKeys(ctx), tag+":traced", tag+":snoozes")
	bound := traceKeep + time.Minute
	left := 0
	for _, k := range keys {
		ttl, err := r.rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond:
			continue // gone
		case ttl <= 0 || ttl > bound:
			t.Errorf("%s: TTL %v, want within (0, %v]", k, ttl, bound)
		}
		left++
	}
	t.Logf("%d trace contexts and markers left, each expiring within %v", left, bound)
}

// runPace is how long each run of the mixed set takes, in both releases:
// a batch of 8 then holds its claimer 50 ms, while the other claims.
const runPace = 50 * time.Millisecond
