package jobs_test

import (
	"cmp"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// FuzzConfigs: every constructor, given any Batch, MaxBatches,
// RedisTimeout, ScoreUnit, Name and key, returns a job with a valid name or
// ErrInvalidConfig/ErrInvalidArgument naming what is wrong; never a panic,
// never a Redis call (the client is never dialled). Derived names are
// valid job names whatever the key.
func FuzzConfigs(f *testing.F) {
	f.Add(uint8(0), int64(0), int64(0), int64(0), int64(0), "", "sessions")
	f.Add(uint8(1), int64(-1), int64(-1), int64(-1), int64(-1), "a b", "a{}b")
	f.Add(uint8(2), int64(1000), int64(1<<40), int64(10*time.Second), int64(time.Second), "n", "app:{t7}:sessions")
	f.Add(uint8(3), int64(1001), int64(0), int64(10*time.Second+1), int64(1500*time.Microsecond), strings.Repeat("n", 129), "}{")
	f.Add(uint8(4), int64(1<<62), int64(-1<<62), int64(1<<62), int64(-1<<62), "x:y", "\xff\x00{")
	f.Add(uint8(3), int64(1), int64(1), int64(time.Millisecond), int64(time.Hour), "", strings.Repeat("k:", 200))
	rdb := redisClientOffline(f)
	q, err := queue.New(rdb, "fuzz", queue.Config{})
	if err != nil {
		f.Fatal(err)
	}
	fallback, err := exphash.New(rdb, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, batch, maxBatches, redisTimeout, scoreUnit int64, name, key string) {
		rt := time.Duration(redisTimeout)
		var culprits []string
		check := func(bad bool, field string) {
			if bad {
				culprits = append(culprits, field)
			}
		}
		var job recruiter.Job
		var err error
		var defBatch int
		batching := jobs.Batching{Batch: int(batch), MaxBatches: int(maxBatches), Name: name, RedisTimeout: rt}
		switch kind % 5 {
		case 0:
			defBatch = tidyBatchDefault
			job, err = jobs.TidyStale(q, jobs.TidyConfig{Batching: batching})
		case 1:
			defBatch = promoteBatchDefault
			job, err = jobs.PromoteDue(q, jobs.PromoteConfig{Batching: batching})
		case 2:
			defBatch = drainBatchDefault
			job, err = jobs.Drain(q, nopHandler, jobs.DrainConfig{Batching: batching})
		case 3, 4:
			defBatch = evictBatchDefault
			cfg := jobs.EvictConfig{Batching: batching, ScoreUnit: time.Duration(scoreUnit)}
			unit := cmp.Or(cfg.ScoreUnit, scoreUnitDefault)
			check(unit < time.Millisecond || unit%time.Millisecond != 0, "ScoreUnit")
			if kind%5 == 3 {
				check(key == "", "key")
				job, err = jobs.EvictExpiredMembers(rdb, key, cfg)
			} else {
				check(unit != scoreUnitDefault, "ScoreUnit")
				// The key is exphash.New's to check (FuzzNew there); a
				// key it refuses leaves the config to check on another.
				h, herr := exphash.New(rdb, key)
				if bad := key == "" || strings.ContainsAny(key, "{}") && redistest.HashTag(key) == key; bad != (herr != nil) {
					t.Fatalf("exphash.New(%q): %v; want an error: %v", key, herr, bad)
				} else if bad {
					h = fallback
				}
				job, err = jobs.EvictExpired(h, cfg)
				if err == nil && name == "" && job.Name() != "evict."+key && h != fallback && validJobName.MatchString("evict."+key) {
					t.Fatalf("EvictExpired of %q is named %q", key, job.Name())
				}
			}
		}
		b := cmp.Or(int(batch), defBatch)
		check(b < 1 || b > queue.BatchMax, "Batch")
		check(maxBatches < 0, "MaxBatches")
		r := cmp.Or(rt, redisTimeoutDefault)
		check(r < time.Millisecond || r > 10*time.Second, "RedisTimeout")
		check(name != "" && !validJobName.MatchString(name), "Name")

		if len(culprits) > 0 {
			if job != nil || err == nil {
				t.Fatalf("kind %d, culprits %v: got %v, %v; want an error", kind%5, culprits, job, err)
			}
			if !errors.Is(err, jobs.ErrInvalidConfig) && !errors.Is(err, jobs.ErrInvalidArgument) {
				t.Fatalf("error %v wraps neither ErrInvalidConfig nor ErrInvalidArgument", err)
			}
			for _, c := range culprits {
				if strings.Contains(err.Error(), c) {
					return
				}
			}
			t.Fatalf("kind %d: error %q names none of %v", kind%5, err, culprits)
		}
		if err != nil {
			t.Fatalf("kind %d, batch %d, max %d, timeout %v, name %q, key %q: %v", kind%5, batch, maxBatches, rt, name, key, err)
		}
		if got := job.Name(); !validJobName.MatchString(got) || name != "" && got != name {
			t.Fatalf("job name %q: not a valid job name, or not the configured %q", got, name)
		}
	})
}

// The documented defaults of the configs' zero fields.
const (
	drainBatchDefault   = 100
	evictBatchDefault   = 500
	promoteBatchDefault = 500
	redisTimeoutDefault = 250 * time.Millisecond
	scoreUnitDefault    = time.Millisecond
	tidyBatchDefault    = 500
)

// redisClientOffline is a client that is never dialled, for fuzz set-up.
func redisClientOffline(tb testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
