package recruiter

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/registry"
)

// The registry (internal/registry) lists a fleet's jobs, queues and task
// types for operators' tools. A recruiter writes it from its pace timer,
// never on a caller's path: Register has no context and must not wait on
// Redis, and the first write comes only once a slice has reached Redis.

func init() {
	registry.PauseJob = func(ctx context.Context, rdb redis.Scripter, prefix, job string, d time.Duration) error {
		l := jobLock{key: prefix + ":lock:" + job}
		return l.pause(ctx, rdb, d)
	}
	registry.ReadLock = readLock
	registry.NextTick = func(expr string, after time.Time) (time.Time, error) {
		s, err := parseSchedule(expr)
		if err != nil {
			return time.Time{}, err
		}
		return s.next(after), nil
	}
	registry.PauseMax = pauseMax
}

// registryState is what a recruiter wrote to the registry.
type registryState struct {
	written atomic.Pointer[roster] // the roster last written
	retryAt atomic.Int64           // unix ns before which no write is tried again after one failed
}

// registryRetry spaces the writes after one failed (an ACL grant without
// the registry's keys, Redis down), so that the timer does not spend a
// round trip on each of its wakes.
const registryRetry = time.Minute

// writeRegistry writes the jobs if the roster changed since the last
// write, and the notes of queues and task types made with r's client. It
// runs on the pace timer, skips while the breaker is open, and after a
// failure (logged at debug level) waits registryRetry.
func (r *Recruiter) writeRegistry() {
	ros := r.jobs.Load()
	changed := r.registry.written.Load() != ros
	if !changed && !registry.Pending(r.rdb) || r.breaker.isOpen() || time.Now().UnixNano() < r.registry.retryAt.Load() {
		return
	}
	var jobs []registry.Job
	if changed {
		for _, e := range ros.entries {
			jobs = append(jobs, registry.Job{Name: e.name, BudgetMS: e.cfg.Budget.Milliseconds(),
				EveryMS: e.cfg.Every.Milliseconds(), Rate: e.cfg.Rate, Schedule: e.cfg.Schedule})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	if err := registry.Write(ctx, r.rdb, r.cfg.Prefix, jobs); err != nil {
		r.registry.retryAt.Store(time.Now().Add(registryRetry).UnixNano())
		r.cfg.Logger.Debug("worksteal: could not write the registry", slog.Any("error", err))
		return
	}
	r.registry.written.Store(ros)
}

// readLock reads a job's lock (lock_acquire.lua says its fields) in one
// pipeline of plain reads, so that a read-only ACL user can run it.
func readLock(ctx context.Context, rdb redis.UniversalClient, prefix, job string) (registry.Lock, error) {
	key := prefix + ":lock:" + job
	pipe := rdb.Pipeline()
	tc := pipe.Time(ctx)
	fc := pipe.HMGet(ctx, key, "held", "rest", "paused", "tick", "fleet", "streak")
	ec := pipe.Exists(ctx, key)
	_, err := pipe.Exec(ctx)
	var l registry.Lock
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
