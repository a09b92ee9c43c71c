package jobs

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/exphash"
	"github.com/worksteal/worksteal/internal/drain"
	"github.com/worksteal/worksteal/internal/heal"
	"github.com/worksteal/worksteal/recruiter"
)

var (
	//go:embed evict_members.lua
	evictMembersSource string
	evictMembersScript = redis.NewScript(evictMembersSource)
)

// scoreUnitDefault is EvictConfig.ScoreUnit's default, and the unit of an
// [exphash.Hash]'s expiries.
const scoreUnitDefault = time.Millisecond

// EvictConfig configures [EvictExpired] and [EvictExpiredMembers]. The
// zero value is valid.
type EvictConfig struct {
	// Batching's defaults for evictions: Batch 500 expired entries per
	// script call, Name "evict.KEY" or "evict-members.KEY" (KEY's bytes
	// outside [A-Za-z0-9._-] replaced, and a hash of it appended if it had
	// any or was too long), RedisTimeout 250ms.
	Batching
	// ScoreUnit is the unit of the sorted set's scores for
	// [EvictExpiredMembers]: a score is an expiry time in ScoreUnits since
	// the Unix epoch, e.g. time.Second for scores from time.Now().Unix().
	// Whole milliseconds only. A member expires once Redis's clock, in
	// whole ScoreUnits, reaches its score. [EvictExpired] accepts only the
	// default, since an [exphash.Hash] writes milliseconds. Default 1ms.
	ScoreUnit time.Duration
}

func (c EvictConfig) withDefaults() EvictConfig {
	c.Batching = c.Batching.withDefaults(evictBatchDefault)
	c.ScoreUnit = cmp.Or(c.ScoreUnit, scoreUnitDefault)
	return c
}

func (c EvictConfig) validate() error {
	if err := c.Batching.validate(); err != nil {
		return err
	}
	if c.ScoreUnit < time.Millisecond || c.ScoreUnit%time.Millisecond != 0 {
		return fmt.Errorf("%w: ScoreUnit %v is not a whole number of milliseconds", ErrInvalidConfig, c.ScoreUnit)
	}
	return nil
}

// EvictExpired returns the job that removes the expired fields of h, the
// longest expired first, with [exphash.Hash.Evict]: each batch is one
// script that reads the expired fields and removes them together, so a
// field set again with a later expiry is never removed. A slice's Items
// counts the fields removed; More says that its last batch was full.
func EvictExpired(h *exphash.Hash, cfg EvictConfig) (recruiter.Job, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil hash", ErrInvalidArgument)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ScoreUnit != scoreUnitDefault {
		return nil, fmt.Errorf("%w: ScoreUnit %v: an exphash.Hash writes milliseconds", ErrInvalidConfig, cfg.ScoreUnit)
	}
	return batchJob(drain.JobName("evict", h.Name()), cfg.Batching, h.Evict)
}

// EvictExpiredMembers returns the job that removes the expired members of
// the sorted set key, whose scores are expiry times in cfg.ScoreUnit since
// the Unix epoch, the longest expired first: sessions, rate-limit windows,
// presence. Each batch is one script, so a member whose score was raised
// is never removed. A slice's Items counts the members removed; More says
// that its last batch was full.
func EvictExpiredMembers(rdb redis.Scripter, key string, cfg EvictConfig) (recruiter.Job, error) {
	switch {
	case rdb == nil:
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidArgument)
	case key == "":
		return nil, fmt.Errorf("%w: empty key", ErrInvalidArgument)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys, unit := []string{key}, cfg.ScoreUnit.Milliseconds()
	rdb = heal.Scripter(rdb) // a ClusterClient whose master died finds its replica
	step := func(ctx context.Context, max int) (int, error) {
		n, err := evictMembersScript.Run(ctx, rdb, keys, max, unit).Int()
		if err != nil {
			return n, fmt.Errorf("evict members of %s: %w", key, err)
		}
		return n, nil
	}
	return batchJob(drain.JobName("evict-members", key), cfg.Batching, step)
}
