package joblock

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key is the lock of job under prefix: one Redis hash.
func Key(prefix, job string) string {
	return prefix + ":lock:" + job
}

// PauseMax is the longest pause: a longer one is a job to remove.
const PauseMax = 30 * 24 * time.Hour

var (
	//go:embed pause.lua
	pauseSource string
	// Run rather than RunRO: EVALSHA_RO needs Redis 7, and the recruiter
	// works with 6.2 too.
	pauseScript = redis.NewScript(pauseSource)
)

// PauseSource is pause.lua's text: the recruiter's start-up check reads
// the commands it calls.
func PauseSource() string { return pauseSource }

// Pause pauses the job whose lock is key for d, fleet-wide; d == 0
// resumes it. d is at most PauseMax: the caller checks it.
func Pause(ctx context.Context, rdb redis.Scripter, key string, d time.Duration) error {
	return pauseScript.Run(ctx, rdb, []string{key}, d.Milliseconds()).Err()
}

// Lock is what a job's lock holds, as [Read] found it; times are by
// Redis's clock, zero when unset or past.
type Lock struct {
	Exists      bool      // the key exists
	Legacy      bool      // the string lock of an earlier version
	HeldUntil   time.Time // a slice runs until at most then
	RestUntil   time.Time // the job rests (a cooldown, or its slot's run is taken)
	PausedUntil time.Time // an operator paused the job
	Tick        time.Time // a schedule's latest tick taken, or skipped while paused
	Fleet       float64   // automatic pace: the processes that visit, as counted; 0 if unknown
	Streak      int       // automatic pace: slices in a row that reported a backlog
	Now         time.Time // Redis's clock at the reading
}

// Read reads the lock at key in one pipeline of plain reads, with no
// script and no write, so that a read-only ACL user can run it.
func Read(ctx context.Context, rdb redis.UniversalClient, key string) (Lock, error) {
	pipe := rdb.Pipeline()
	tc := pipe.Time(ctx)
	fc := pipe.HMGet(ctx, key, "held", "rest", "paused", "tick", "fleet", "streak")
	ec := pipe.Exists(ctx, key)
	_, err := pipe.Exec(ctx)
	var l Lock
	if tc.Err() != nil || ec.Err() != nil {
		return l, errors.Join(tc.Err(), ec.Err())
	}
	l.Now, l.Exists = tc.Val(), ec.Val() == 1
	if err != nil {
		if l.Exists {
			l.Legacy = true // WRONGTYPE: a string lock
			return l, nil
		}
		return l, err
	}
	f := fc.Val()
	at := func(v any) time.Time {
		s, _ := v.(string)
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms <= l.Now.UnixMilli() {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	}
	l.HeldUntil, l.RestUntil, l.PausedUntil = at(f[0]), at(f[1]), at(f[2])
	if s, ok := f[3].(string); ok {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
			l.Tick = time.UnixMilli(ms)
		}
	}
	if s, ok := f[4].(string); ok {
		l.Fleet, _ = strconv.ParseFloat(s, 64)
	}
	if s, ok := f[5].(string); ok {
		l.Streak, _ = strconv.Atoi(s)
	}
	return l, nil
}
