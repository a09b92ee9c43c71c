package recruiter

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
)

// The acquire script of the release before the carrier: a rolling deploy
// runs it beside this one on the same locks.
//
//go:embed testdata/lock_acquire_previous.lua
var previousAcquireSource string

// TestCarrierMidDeploy: a process of the previous release (positional
// arguments, a positional reply) and one of this release (named ones)
// visit one automatically paced lock in each of 40 slots, in either order.
// Each slot's run is taken exactly once (none lost, none twice), and the
// older of the two carries the job whichever release it runs: both read
// and write the hash's fields alike.
func TestCarrierMidDeploy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	previous := redis.NewScript(previousAcquireSource)
	const every = 50 * time.Millisecond
	ctx := context.Background()
	for _, previousOlder := range []bool{false, true} {
		name := fmt.Sprintf("tidy-%v", previousOlder)
		cfg := JobConfig{Every: every, Budget: time.Millisecond}
		l := newJobLock(redistest.Prefix(t), name, cfg)
		p := newPace(name, every, time.Now())
		bornThis, bornPrevious := fmt.Sprintf("%016d%04d", time.Now().UnixMicro(), 1), fmt.Sprintf("%016d%04d", time.Now().UnixMicro(), 2)
		if previousOlder {
			bornThis, bornPrevious = bornPrevious, bornThis
		}
		carried := map[string]int{}
		// Each visit that takes the run releases it at once, as a slice
		// that ends does, so that the next visit of the slot meets the
		// slot taken.
		visitPrevious := func() bool {
			reply, err := previous.Run(ctx, rdb, []string{l.key}, "old", l.ttl.Milliseconds(), every.Milliseconds(), "1", "1",
				p.phase.Milliseconds(), (acquireKeep * every).Milliseconds(), 0, false, 1, bornPrevious, (every + every/2).Milliseconds()).Slice()
			if err != nil || len(reply) != 10 {
				t.Fatalf("the previous release's acquire: %v, %v", reply, err)
			}
			if reply[9].(int64) == 1 {
				carried["previous"]++
			}
			if reply[0].(int64) != int64(lockTaken) {
				return false
			}
			if err := (heldLock{lock: &l, rdb: rdb, token: "old"}).release(ctx, releasePlain); err != nil {
				t.Fatal(err)
			}
			return true
		}
		visitThis := func() (bool, time.Duration) {
			e := &entry{cfg: cfg, lock: l}
			v := p.visit(e, false, time.Now())
			v.born = bornThis
			h, g, err := l.acquire(ctx, rdb, v)
			if err != nil {
				t.Fatalf("this release's acquire: %v", err)
			}
			if g.carry {
				carried["this"]++
			}
			if g.state != lockTaken {
				return false, g.left
			}
			if err := h.release(ctx, releasePlain); err != nil {
				t.Fatal(err)
			}
			return true, g.left
		}
		for slot := range 40 {
			// Both visits early in a slot: wait for the next one's start.
			_, left := visitThis()
			time.Sleep(left + 2*time.Millisecond)
			taken := 0
			for i := range 2 {
				var took bool
				if (slot+i)%2 == 0 {
					took = visitPrevious()
				} else {
					took, _ = visitThis()
				}
				if took {
					taken++
				}
			}
			if taken != 1 {
				t.Errorf("previous older %v, slot %d: its run taken %d times, want once", previousOlder, slot, taken)
			}
		}
		older, visits := "this", 80
		if previousOlder {
			older, visits = "previous", 40
		}
		if carried[older] < visits-1 {
			t.Errorf("previous older %v: the older process carried %d of its %d visits, want all (after its first): %v", previousOlder, carried[older], visits, carried)
		}
		fields, err := rdb.HGetAll(ctx, l.key).Result()
		if want := min(bornThis, bornPrevious); err != nil || fields["carrier"] != want {
			t.Errorf("previous older %v: the lock's hash %v (%v): want the older process, %s, as its carrier", previousOlder, fields, err, want)
		}
	}
}

// TestScheduleMidDeploy: a process of the previous release and one of
// this release visit one scheduled lock at each of 40 ticks, in either
// order: each tick is taken exactly once, and a tick older than the
// latest taken is refused by both.
func TestScheduleMidDeploy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	previous := redis.NewScript(previousAcquireSource)
	ctx := context.Background()
	cfg := JobConfig{Schedule: "* * * * * *", Budget: time.Millisecond}
	l := newJobLock(redistest.Prefix(t), "nightly", cfg)
	born := fmt.Sprintf("%016d%04d", time.Now().UnixMicro(), 0)
	keep := time.Minute
	visitPrevious := func(tick int64) bool {
		reply, err := previous.Run(ctx, rdb, []string{l.key}, "old", l.ttl.Milliseconds(), 0, "2", "1", 0, keep.Milliseconds(), tick, false, 1, born, 1500).Slice()
		if err != nil || len(reply) != 10 {
			t.Fatalf("the previous release's acquire: %v, %v", reply, err)
		}
		if reply[0].(int64) != int64(lockTaken) {
			return false
		}
		if err := (heldLock{lock: &l, rdb: rdb, token: "old"}).release(ctx, releasePlain); err != nil {
			t.Fatal(err)
		}
		return true
	}
	visitThis := func(tick int64) bool {
		v := visit{tick: time.UnixMilli(tick), born: born, carrierSilence: 1500 * time.Millisecond,
			args: []any{"tick", tick, keep.Milliseconds(), "1"}}
		h, g, err := l.acquire(ctx, rdb, v)
		if err != nil {
			t.Fatalf("this release's acquire: %v", err)
		}
		if g.state != lockTaken {
			return false
		}
		if g.tick != tick {
			t.Errorf("tick %d taken, the reply says %d", tick, g.tick)
		}
		if err := h.release(ctx, releasePlain); err != nil {
			t.Fatal(err)
		}
		return true
	}
	first := time.Now().Add(-time.Minute).UnixMilli()
	for i := range 40 {
		tick := first + int64(i)*1000
		taken := 0
		for j := range 2 {
			var took bool
			if (i+j)%2 == 0 {
				took = visitPrevious(tick)
			} else {
				took = visitThis(tick)
			}
			if took {
				taken++
			}
		}
		if taken != 1 {
			t.Errorf("tick %d: taken %d times, want once", i, taken)
		}
		if i > 0 && (visitThis(tick-1000) || visitPrevious(tick-1000)) {
			t.Errorf("tick %d: taken again after a later one", i-1)
		}
	}
}
