package recruiter_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// enlistFor has goroutines enlisting on every recruiter until d has passed.
func enlistFor(d time.Duration, goroutines int, recs ...*recruiter.Recruiter) {
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, rec := range recs {
		for range goroutines {
			wg.Go(func() {
				for time.Now().Before(stop) {
					rec.Enlist(context.Background())
					time.Sleep(50 * time.Microsecond) // a request's worth of other work
				}
			})
		}
	}
	wg.Wait()
}

func shutdown(t *testing.T, recs ...*recruiter.Recruiter) {
	t.Helper()
	for _, rec := range recs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := rec.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		cancel()
	}
}

// TestMutualExclusion: three processes' recruiters (separate clients),
// 32 goroutines each, four slice slots each, on one job that records in
// Redis how many of its slices run at once. The lock alone must keep
// that at one.
func TestMutualExclusion(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	observer := srv.Client(t)
	const running, overlaps, runs = "mx:running", "mx:overlaps", "mx:runs"
	var recs []*recruiter.Recruiter
	for range 3 {
		rdb := srv.Client(t)
		rec := newRecruiter(t, rdb, recruiter.Config{MaxConcurrent: 4, Prefix: "mx"}, nil)
		mustRegister(t, rec, recruiter.Func("exclusive", func(ctx context.Context) (recruiter.Report, error) {
			// The record is kept whatever the slice's deadline does, so
			// that it stays true on a slow machine.
			rec := context.WithoutCancel(ctx)
			if n, err := rdb.Incr(rec, running).Result(); err != nil {
				return recruiter.Report{}, err
			} else if n > 1 {
				rdb.Incr(rec, overlaps)
			}
			rdb.Incr(rec, runs)
			if rand.IntN(4) == 0 {
				<-ctx.Done() // use the whole budget: the lock must outlive it
			} else {
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			}
			rdb.Decr(rec, running)
			return recruiter.Report{Items: 1, More: rand.IntN(2) == 0}, nil
		}), recruiter.JobConfig{Rate: 1, Budget: 50 * time.Millisecond})
		recs = append(recs, rec)
	}
	// Three seconds at least, and on until 20 slices have run: a loaded
	// machine ran only 11 in the first three seconds once, and the claim
	// is about overlaps, not throughput. Twenty seconds without 20 slices
	// is a recruiter that stopped running the job.
	ctx := context.Background()
	began := time.Now()
	enlistFor(3*time.Second, 32, recs...)
	for n, _ := observer.Get(ctx, runs).Int(); n < 20 && time.Since(began) < 20*time.Second; n, _ = observer.Get(ctx, runs).Int() {
		enlistFor(500*time.Millisecond, 32, recs...)
	}
	took := time.Since(began)
	shutdown(t, recs...)

	nRuns, _ := observer.Get(ctx, runs).Int()
	nOverlaps, _ := observer.Get(ctx, overlaps).Int()
	t.Logf("%d slices ran in %v, %d overlapped", nRuns, took, nOverlaps)
	if nOverlaps != 0 {
		t.Fatalf("%d of %d slices overlapped another", nOverlaps, nRuns)
	}
	if nRuns < 20 {
		t.Fatalf("only %d slices ran in %v", nRuns, took)
	}
	var slices uint64
	for _, rec := range recs {
		js := jobStats(t, rec, "exclusive")
		t.Logf("%+v", js)
		slices += js.Slices
		if js.SkippedLocked+js.SkippedCooldown == 0 && js.Slices == 0 {
			t.Errorf("a recruiter neither ran nor met the lock: %+v", js)
		}
	}
	if slices != uint64(nRuns) {
		t.Fatalf("Stats count %d slices, Redis counts %d", slices, nRuns)
	}
}

// TestEveryHoldsAcrossRecruiters: with Every, runs over a window stay
// within window/Every + 1, however many processes enlist.
func TestEveryHoldsAcrossRecruiters(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	observer := srv.Client(t)
	const every = 200 * time.Millisecond
	var recs []*recruiter.Recruiter
	for range 3 {
		rdb := srv.Client(t)
		rec := newRecruiter(t, rdb, recruiter.Config{MaxConcurrent: 2, Prefix: "every"}, nil)
		mustRegister(t, rec, recruiter.Func("periodic", func(ctx context.Context) (recruiter.Report, error) {
			return recruiter.Report{Items: 1}, rdb.Incr(ctx, "every:runs").Err()
		}), recruiter.JobConfig{Rate: 1, Every: every})
		recs = append(recs, rec)
	}
	began := time.Now()
	enlistFor(2*time.Second, 32, recs...)
	shutdown(t, recs...)
	window := time.Since(began)

	runs, _ := observer.Get(context.Background(), "every:runs").Int()
	limit := int(window/every) + 1
	t.Logf("%d runs in %v with Every %v (limit %d)", runs, window, every, limit)
	if runs > limit {
		t.Fatalf("%d runs in %v, want at most %d with Every %v", runs, window, limit, every)
	}
	if runs < limit/2 {
		t.Fatalf("%d runs in %v: the cooldown held the job back far longer than Every %v", runs, window, every)
	}
	var cooldownSkips uint64
	for _, rec := range recs {
		cooldownSkips += jobStats(t, rec, "periodic").SkippedCooldown
	}
	if cooldownSkips == 0 {
		t.Fatal("no recruiter met the cooldown in Redis")
	}
}

// TestLocalCoolOffBoundsRedisTraffic: with the lock held elsewhere, 10,000
// enlistments cost one lock attempt and one probe, not 10,000.
func TestLocalCoolOffBoundsRedisTraffic(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true, Prefix: "cool"})
	mustRegister(t, b.rec, recruiter.Func("busy", noop), recruiter.JobConfig{Rate: 1})
	ctx := context.Background()
	if err := b.rdb.Set(ctx, "cool:lock:busy", "another-node", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	scripts := func() int64 { return b.srv.CommandCalls(t, "evalsha") + b.srv.CommandCalls(t, "eval") }
	before := scripts()
	for range 10_000 {
		b.rec.Enlist(ctx)
	}
	calls := scripts() - before
	js := jobStats(t, b.rec, "busy")
	t.Logf("10000 enlistments: %d script calls; stats %+v", calls, js)
	// obtain + probe, each possibly EVALSHA then EVAL the first time.
	if calls < 2 || calls > 4 {
		t.Fatalf("10000 enlistments made %d script calls, want 2 to 4", calls)
	}
	if js.SkippedLocked != 1 || js.SkippedGate != 9_999 || js.Ran != 0 {
		t.Fatalf("stats = %+v, want 1 skipped_locked and 9999 gated", js)
	}
}

// TestCoolOffEndsWhenTheLockCanBeHad: the local cool-off lasts until the
// running slice must have ended, then the job runs.
func TestCoolOffEndsWhenTheLockCanBeHad(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "ends"}, nil, clock.Now))
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("j", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	ctx := context.Background()
	// Held by a running slice: it ends at most a budget before its lock expires.
	b.rdb.Set(ctx, "ends:lock:j", "another-node", 2*time.Second)
	b.rec.Enlist(ctx)
	b.rdb.Del(ctx, "ends:lock:j")
	clock.Advance(2*time.Second - recruiter.LockTTL(recruiter.BudgetDefault) + recruiter.BudgetDefault - 100*time.Millisecond)
	b.rec.Enlist(ctx)
	if runs.Load() != 0 {
		t.Fatal("the job ran while this process should still be cooling off")
	}
	clock.Advance(200 * time.Millisecond)
	b.rec.Enlist(ctx)
	if runs.Load() != 1 {
		t.Fatalf("after the cool-off the job ran %d times, want 1", runs.Load())
	}
}

// TestMoreReleasesTheLock: a backlog lets the next enlistment continue at
// once; no backlog with Every keeps the key as the cooldown.
func TestMoreReleasesTheLock(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "more"}, fixedRoll(0), nil))
	var backlog atomic.Int32
	backlog.Store(3)
	mustRegister(t, b.rec, recruiter.Func("drain", func(context.Context) (recruiter.Report, error) {
		left := backlog.Add(-1)
		return recruiter.Report{Items: 1, More: left > 0}, nil
	}), recruiter.JobConfig{Rate: 1, Every: time.Minute})
	ctx := context.Background()
	for i := range 3 {
		b.rec.Enlist(ctx)
		if got := backlog.Load(); got != int32(2-i) {
			t.Fatalf("after enlistment %d the backlog is %d, want %d", i+1, got, 2-i)
		}
	}
	lock, err := b.rdb.HGetAll(ctx, "more:lock:drain").Result()
	ttl := b.rdb.PTTL(ctx, "more:lock:drain").Val()
	if err != nil || lock["rest"] == "" || lock["token"] != "" || ttl < 50*time.Second {
		t.Fatalf("after the backlog the lock key = %v (%v), ttl %v; want the cooldown (rest) for ~1m, no token", lock, err, ttl)
	}
	b.rec.Enlist(ctx)
	if js := jobStats(t, b.rec, "drain"); js.Ran != 3 || js.Items != 3 || js.SkippedGate != 1 {
		t.Fatalf("stats = %+v, want 3 ran, 3 items, then 1 gated by the cool-off", js)
	}
}

// TestBacklogStreak: under automatic pace a slice that reports More
// reopens its slot and grows the streak, and its process comes back after
// Every/2^streak; a slice of a streak that caught up but found items
// reopens the slot too and holds the streak; one that finds nothing
// shrinks it, and at zero ends it and keeps the slot's run. Only the
// visit that began the streak counts towards the fleet's size: the
// streak's own would swell it. Every is a week, so that Redis's
// slot does not turn during the test.
func TestBacklogStreak(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "streak"}, fixedRoll(0), clock.Now))
	reports := []recruiter.Report{{Items: 5, More: true}, {Items: 5, More: true}, {Items: 2}, {}, {}}
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("drain", func(context.Context) (recruiter.Report, error) {
		return reports[runs.Add(1)-1], nil
	}), recruiter.JobConfig{Every: recruiter.EveryMax})
	ctx := context.Background()
	want := func(wantStreak string, wantSlot bool) {
		t.Helper()
		h, err := b.rdb.HGetAll(ctx, "streak:lock:drain").Result()
		if err != nil || h["streak"] != wantStreak || (h["slot"] != "") != wantSlot || h["visits"] != "1" {
			t.Fatalf("after slice %d the lock is %v (%v); want streak %q, a slot %v, visits 1", runs.Load(), h, err, wantStreak, wantSlot)
		}
	}
	// next is the next slice, after the given cool-off and not a moment before.
	next := func(after time.Duration) {
		t.Helper()
		n := runs.Load()
		clock.Advance(after - time.Second)
		b.rec.Enlist(ctx)
		clock.Advance(time.Second)
		b.rec.Enlist(ctx)
		if got := runs.Load() - n; got != 1 {
			t.Fatalf("%d slices ran in a cool-off of %v and just after it, want 1, after it", got, after)
		}
	}
	b.rec.Enlist(ctx)
	want("1", false) // More: the slot opens again
	next(recruiter.EveryMax / 2)
	want("2", false) // More again
	next(recruiter.EveryMax / 4)
	want("2", false) // caught up but found items: the streak holds
	next(recruiter.EveryMax / 4)
	want("1", false) // found nothing: the streak shrinks
	next(recruiter.EveryMax / 2)
	want("", true) // found nothing again: the streak ends, the slot's run is taken
	if js := jobStats(t, b.rec, "drain"); js.Ran != 5 || js.Items != 12 || js.SkippedGate != 4 {
		t.Fatalf("stats = %+v, want 5 ran, 12 items, 4 gated by the cool-off", js)
	}
}

// TestLockOnCluster: the lock and its scripts work on a 3-master cluster,
// with jobs whose keys land on different masters.
func TestLockOnCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t)
	var recs []*recruiter.Recruiter
	var runs [4]atomic.Int32
	for range 2 {
		rdb := cluster.Client(t)
		// RedisTimeout 5s: a lock call to a loaded cluster may take longer
		// than the default 500ms, and would count as an error here.
		rec := newRecruiter(t, rdb, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "cl", RedisTimeout: 5 * time.Second}, rand.Float64, nil), nil)
		for i := range runs {
			mustRegister(t, rec, recruiter.Func("job"+strconv.Itoa(i), func(ctx context.Context) (recruiter.Report, error) {
				runs[i].Add(1)
				return recruiter.Report{Items: 1}, nil
			}), recruiter.JobConfig{Rate: 0.25, Every: time.Minute})
		}
		recs = append(recs, rec)
	}
	// Until every job has run (a fixed second was not always enough on a
	// loaded machine), then a second more, in which none may run again.
	testrig.Eventually(t, 20*time.Second, "every job run once", func() bool {
		enlistFor(10*time.Millisecond, 4, recs...)
		for i := range runs {
			if runs[i].Load() == 0 {
				return false
			}
		}
		return true
	})
	enlistFor(time.Second, 4, recs...)
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("job%d ran %d times across the cluster within its Every, want 1", i, n)
		}
	}
	for _, rec := range recs {
		for _, js := range rec.Stats().Jobs {
			if js.Errors != 0 || js.Ran+js.SkippedCooldown == 0 {
				t.Errorf("%s: %+v; want no errors, and each recruiter to run it or meet its cooldown", js.Name, js)
			}
		}
	}
	rdb := cluster.Client(t)
	for i := range runs {
		key := "cl:lock:job" + strconv.Itoa(i)
		if v, _ := rdb.HGetAll(context.Background(), key).Result(); v["rest"] == "" || v["token"] != "" {
			t.Errorf("%s = %v, want the cooldown (rest), no token", key, v)
		}
	}
}
