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

// TestCarrierMidDeploy: a process of the previous release and one of
// this release visit one automatically paced lock in each of 40 slots,
// in either order. Each slot's run is taken exactly once (none lost, none
// twice), the previous release's script reads the carrier's fields
// without fault, and this release's process carries the job.
func TestCarrierMidDeploy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	previous := redis.NewScript(previousAcquireSource)
	const every = 50 * time.Millisecond
	l := newJobLock(redistest.Prefix(t), "tidy", JobConfig{Every: every, Budget: time.Millisecond})
	ctx := context.Background()
	// Each visit that takes the run releases it at once, as a slice that
	// ends does, so that the next visit of the slot meets the slot taken.
	visitPrevious := func() bool {
		reply, err := previous.Run(ctx, rdb, []string{l.key}, "old", l.ttl.Milliseconds(), every.Milliseconds(), "1", "1",
			l.phase.Milliseconds(), (acquireKeep * every).Milliseconds(), 0, false, 1).Slice()
		if err != nil || len(reply) != 9 {
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
	born := fmt.Sprintf("%016d%04d", time.Now().UnixMicro(), 0)
	carried := 0
	visitThis := func() (bool, time.Duration) {
		h, g, err := l.acquire(ctx, rdb, visit{weight: 1, born: born, silent: every + every/2})
		if err != nil {
			t.Fatalf("this release's acquire: %v", err)
		}
		if g.carry {
			carried++
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
			t.Errorf("slot %d: its run taken %d times, want once", slot, taken)
		}
	}
	if carried != 80 {
		t.Errorf("this release's process carried %d of its 80 visits, want all", carried)
	}
	fields, err := rdb.HGetAll(ctx, l.key).Result()
	if err != nil || fields["carrier"] != born {
		t.Errorf("the lock's hash %v (%v): want this release's process as its carrier", fields, err)
	}
}
