package failover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/heal"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
)

// servers is how many web servers the app runs, each with its own client.
const servers = 2

// The master that owns a queue's slot (and its drain's lock) is SIGKILLed
// while two servers enqueue continuously and drain the queue with stolen
// work, through ClusterClients left at go-redis's defaults; its replica is
// promoted. See the package doc for what is counted.
func TestClusterMasterKilledMidEnqueueAndDrain(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWithReplicas(t)
	ctx := testrig.Context(t, 30*time.Second)
	prefix := redistest.Prefix(t)
	const queueName = "orders"
	slot, err := c.SlotOf(ctx, "{"+prefix+":q:"+queueName+"}")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := c.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	// The drain's lock on the same master, so that the failover takes it too.
	drainName := ""
	for i := 0; drainName == ""; i++ {
		name := fmt.Sprintf("drain-%d", i)
		s, err := c.SlotOf(ctx, prefix+":lock:"+name)
		if err != nil {
			t.Fatal(err)
		}
		if o, err := c.Owner(ctx, s); err == nil && o == owner {
			drainName = name
		}
	}
	clients := make([]redis.UniversalClient, servers)
	for i := range clients {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
		t.Cleanup(func() { _ = cc.Close() })
		clients[i] = cc
	}
	a := newApp(t, prefix, queueName, drainName, clients)
	// No bound from the kill: the promotion alone takes 2-3 s.
	failover(t, a, func() *redistest.Failover { return c.KillMaster(t, slot) }, 0)
	var reloads []uint64
	for _, cl := range clients {
		reloads = append(reloads, heal.Reloads(cl))
	}
	t.Logf("slot map reloads asked per client: %v", reloads)
}

// The same with a primary, two replicas and three Sentinels, through
// go-redis's failover clients left at their defaults.
func TestSentinelMasterKilledMidEnqueueAndDrain(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	clients := make([]redis.UniversalClient, servers)
	for i := range clients {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: s.Addrs()})
		t.Cleanup(func() { _ = rdb.Close() })
		clients[i] = rdb
	}
	a := newApp(t, redistest.Prefix(t), "orders", "drain", clients)
	failover(t, a, func() *redistest.Failover { return s.KillMaster(t) }, sentinelSliceWithin)
}

// sentinelSliceWithin bounds, under Sentinel, the time from the
// promotion to the first stolen slice's start. The target is 5 s
// from the kill: measured 2.5-2.6 s on an idle 2-core machine, 2.3-3.2 s
// with -race beside two busy loops (promotion 1.3-1.4 s, the failover
// client back 0.8-1 s later, then at most a second to the open breaker's
// next check). Without the check, the breaker's 5 s cooldown, counted
// from failures 1.5 s after the kill, gave 6.5 s from the kill, 5.1 s
// from the promotion. Counted from the promotion, the bound does not
// charge a promotion slowed by a loaded machine to the recruiter.
const sentinelSliceWithin = 3500 * time.Millisecond

// failover kills the master once the app is well under way, waits for
// the promotion, then for an enqueue and a stolen slice to succeed again,
// lets the app run on a little, drains the queue and counts. sliceWithin,
// when positive, bounds the time from the kill to the first stolen
// slice's start, unless the pressure gate held drain slices back
// meanwhile (a loaded machine delays them by design, up to 10 s).
func failover(t *testing.T, a *app, kill func() *redistest.Failover, sliceWithin time.Duration) {
	t.Helper()
	testrig.Eventually(t, 60*time.Second, "the app under way: 1,500 enqueues acknowledged, 300 items drained", func() bool {
		acked, handled := a.counts()
		return acked >= 1500 && handled >= 300
	}, a.describe)
	ackedAtKill, handledAtKill := a.counts()
	pressuredAtKill := a.pressured()
	f := kill()
	promoted, promotedAt := f.WaitPromoted(t, 30*time.Second)

	var (
		enqueued time.Time
		stolen   sliceRun
	)
	testrig.Eventually(t, 60*time.Second, "an enqueue and a stolen slice to succeed after the kill", func() bool {
		var ok1, ok2 bool
		enqueued, ok1 = a.firstEnqueueAfter(f.KilledAt)
		stolen, ok2 = a.firstSliceAfter(f.KilledAt)
		return ok1 && ok2
	}, a.describe)
	held := a.pressured() - pressuredAtKill
	// A little more of both, on the new master.
	acked, _ := a.counts()
	testrig.Eventually(t, 30*time.Second, "200 more enqueues", func() bool { n, _ := a.counts(); return n >= acked+200 }, a.describe)
	a.drained(t, 90*time.Second, f)
	window := newLossWindow(f)
	if sw := f.Switches(); len(sw) > 1 {
		t.Logf("the Sentinels failed over %d times (%v): acknowledged writes up to %v after the kill may be lost by Redis",
			len(sw), sw, window.to.Sub(f.KilledAt).Round(time.Millisecond))
	}
	redelivered, lagged := a.check(t, window, f.KilledAt)
	ackedEnd, handledEnd := a.counts()

	toEnqueue, toSlice := enqueued.Sub(promotedAt), stolen.ended.Sub(promotedAt)
	sliceAfterKill := stolen.began.Sub(f.KilledAt)
	t.Logf("%s killed after %d acknowledged enqueues and %d items drained; %s promoted %v later",
		f.Old.Addr(), ackedAtKill, handledAtKill, promoted.Addr(), promotedAt.Sub(f.KilledAt).Round(time.Millisecond))
	t.Logf("from the promotion: first enqueue %v, first stolen slice %v (ended); from the kill: first stolen slice began %v "+
		"(%d drain slices held back by the pressure gate meanwhile); %d enqueues failed meanwhile (never acknowledged)",
		toEnqueue.Round(time.Millisecond), toSlice.Round(time.Millisecond), sliceAfterKill.Round(time.Millisecond), held, a.enqueueFailed.Load())
	a.mu.Lock()
	again := a.again
	a.mu.Unlock()
	t.Logf("in all %d acknowledged enqueues, %d lost by Redis (acknowledged within %v of the kill, or before a second failover), no other lost (checked above), %d items handled; %d handler calls were redeliveries, "+
		"%d of them of an item whose slice had settled it; %d of %d requests failed; %d drain slices began while another ran",
		ackedEnd, lagged, replicationLag, handledEnd, redelivered, again, a.failed.Load(), a.requests.Load(), a.overlaps.Load())

	if n := a.failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed: stolen work must never fail a request", n, a.requests.Load())
	}
	// The slices are 100ms long; the failover takes seconds: a lock lost
	// with the master cannot let a second slice start beside the first.
	if n := a.overlaps.Load(); n != 0 {
		t.Errorf("%d drain slices began while another ran", n)
	}
	// Targets are a few seconds (see the log line); the bounds hold on a
	// loaded machine and still fail a client left at its 60s slot-map reload.
	if toEnqueue > 15*time.Second {
		t.Errorf("the first enqueue came %v after the promotion, want within seconds", toEnqueue)
	}
	if toSlice > 20*time.Second {
		t.Errorf("the first stolen slice came %v after the promotion, want within seconds", toSlice)
	}
	switch {
	case sliceWithin <= 0:
	case held > 0:
		t.Logf("the pressure gate held %d drain slices back before the first one (a loaded machine): the %v bound from the kill is not asserted",
			held, sliceWithin)
	case stolen.began.Sub(promotedAt) > sliceWithin:
		t.Errorf("the first stolen slice began %v after the promotion (%v after the kill), want within %v: the open breaker should probe once Redis answers",
			stolen.began.Sub(promotedAt).Round(time.Millisecond), sliceAfterKill.Round(time.Millisecond), sliceWithin)
	}
}
