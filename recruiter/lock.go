package recruiter

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A job's lock is one Redis string, {prefix}:lock:{job}. Its value is the
// token of the slice that runs the job, or restValue while the job rests
// (its cluster-wide cooldown, or an operator's pause). Every assumption
// about that key lives in this file: taking it is one SET NX PX; every
// other step is a script that compares the value before it acts.
type jobLock struct {
	key string
	ttl time.Duration // of a running slice's lock: lockTTL(budget)
}

// restValue marks a resting job; tokens are 26 base32 characters, so they
// never equal it.
const restValue = "cooldown"

// The scripts are read-only or compare-and-act; Run rather than RunRO, as
// EVALSHA_RO needs Redis 7 and the recruiter works with 6.2 too.
var (
	//go:embed lock_refresh.lua
	refreshSource string
	refreshScript = redis.NewScript(refreshSource)

	//go:embed lock_release.lua
	releaseSource string
	releaseScript = redis.NewScript(releaseSource)

	//go:embed lock_rest.lua
	restSource string
	restScript = redis.NewScript(restSource)

	//go:embed lock_probe.lua
	probeSource string
	probeScript = redis.NewScript(probeSource)
)

// errLockNotHeld: the lock was no longer this slice's (it expired, and
// another process may hold it).
var errLockNotHeld = errors.New("recruiter: lock no longer held")

// lockTTL is how long a job's lock lives while a slice of the given budget
// runs: the budget plus a margin for the round trips that take and release
// it, garbage-collection pauses and a job a little late to stop. A slice
// that overruns it has its lock extended while it runs; a crashed one holds
// its job for this long.
func lockTTL(budget time.Duration) time.Duration {
	return budget + max(budget/2, 250*time.Millisecond)
}

// obtain takes the lock for a new slice and returns its token; ok is false
// when the lock is held elsewhere.
func (l jobLock) obtain(ctx context.Context, rdb redis.UniversalClient) (token string, ok bool, err error) {
	token = rand.Text()
	ok, err = rdb.SetNX(ctx, l.key, token, l.ttl).Result()
	return token, ok, err
}

// refresh gives a held lock ttl more to live.
func (l jobLock) refresh(ctx context.Context, rdb redis.Scripter, token string, ttl time.Duration) error {
	return held(refreshScript.Run(ctx, rdb, []string{l.key}, token, ttl.Milliseconds()).Int64())
}

// release deletes a held lock.
func (l jobLock) release(ctx context.Context, rdb redis.Scripter, token string) error {
	return held(releaseScript.Run(ctx, rdb, []string{l.key}, token).Int64())
}

// rest turns a held lock into the job's cooldown for d.
func (l jobLock) rest(ctx context.Context, rdb redis.Scripter, token string, d time.Duration) error {
	return held(restScript.Run(ctx, rdb, []string{l.key}, token, restValue, d.Milliseconds()).Int64())
}

func held(n int64, err error) error {
	if err == nil && n == 0 {
		return errLockNotHeld
	}
	return err
}

// lockState is what a probe learns of a lock held elsewhere.
type lockState int

const (
	lockGone    lockState = iota // released meanwhile
	lockRunning                  // a slice runs
	lockResting                  // the job rests
)

// probe reads why the lock is held and its time to live; pttl is negative
// for a key without expiry (an operator's pause).
func (l jobLock) probe(ctx context.Context, rdb redis.Scripter) (lockState, time.Duration, error) {
	reply, err := probeScript.Run(ctx, rdb, []string{l.key}, restValue).Int64Slice()
	if err == nil && (len(reply) != 2 || reply[0] < 0 || reply[0] > 2) {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		return 0, 0, err
	}
	// A TTL past everyMax is an operator's pause, not a slice or a
	// cooldown of ours: the bound also keeps the milliseconds and the
	// cool-off's unix nanoseconds from overflowing.
	return lockState(reply[0]), time.Duration(min(reply[1], everyMax.Milliseconds())) * time.Millisecond, nil
}
