package jobs

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/recruiter"
)

var (
	//go:embed evict_fields.lua
	evictFieldsSource string
	evictFieldsScript = redis.NewScript(evictFieldsSource)

	//go:embed evict_members.lua
	evictMembersSource string
	evictMembersScript = redis.NewScript(evictMembersSource)
)

// EvictConfig configures [EvictExpired] and [EvictExpiredMembers]. The
// zero value is valid: every field has a documented default.
type EvictConfig struct {
	// Batch is how many expired entries one script call removes, at most
	// [BatchMax]. Default 500.
	Batch int
	// MaxBatches bounds the batches of one slice. Default 0: as many as
	// its budget allows.
	MaxBatches int
	// Name overrides the job's name: "evict.KEY" or "evict-members.KEY"
	// by default, KEY's bytes outside [A-Za-z0-9._-] replaced and a hash
	// of it appended if it had any, or was too long.
	Name string
	// RedisTimeout bounds each script call. A call is not cut at the
	// slice's deadline, as its work would be done in Redis all the same but
	// go uncounted; rather, a slice starts no batch that the budget left
	// does not fit. Default 250ms, at most 10s.
	RedisTimeout time.Duration
	// ScoreUnit is the unit of the sorted set's scores for
	// [EvictExpiredMembers]: a score is an expiry time in ScoreUnits since
	// the Unix epoch, e.g. time.Second for scores from time.Now().Unix().
	// Whole milliseconds only. A member expires once Redis's clock, in
	// whole ScoreUnits, reaches its score. [EvictExpired] accepts only the
	// default, since [ExpiringHash] writes milliseconds. Default 1ms.
	ScoreUnit time.Duration
}

func (c EvictConfig) withDefaults() EvictConfig {
	c.Batch = cmp.Or(c.Batch, EvictBatchDefault)
	c.RedisTimeout = cmp.Or(c.RedisTimeout, RedisTimeoutDefault)
	c.ScoreUnit = cmp.Or(c.ScoreUnit, EvictScoreUnitDefault)
	return c
}

func (c EvictConfig) validate() error {
	if err := validateCommon(c.Batch, c.MaxBatches, c.Name, c.RedisTimeout); err != nil {
		return err
	}
	if c.ScoreUnit < time.Millisecond || c.ScoreUnit%time.Millisecond != 0 {
		return fmt.Errorf("%w: ScoreUnit %v is not a whole number of milliseconds", ErrInvalidConfig, c.ScoreUnit)
	}
	return nil
}

// EvictExpired returns the job that removes the expired fields of the
// [ExpiringHash] called key (see [NewExpiringHash] for its Redis keys),
// the longest expired first. Each batch is one script that reads the
// expired fields and removes them together, so a field set again with a
// later expiry is never removed. A slice's Items counts the fields
// removed; More says that its last batch was full.
func EvictExpired(rdb redis.Scripter, key string, cfg EvictConfig) (recruiter.Job, error) {
	h, err := NewExpiringHash(rdb, key)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ScoreUnit != EvictScoreUnitDefault {
		return nil, fmt.Errorf("%w: ScoreUnit %v: EvictExpired's ExpiringHash writes milliseconds", ErrInvalidConfig, cfg.ScoreUnit)
	}
	name := cmp.Or(cfg.Name, jobName("evict", key))
	return &countJob{name: name, batch: cfg.Batch, maxBatches: cfg.MaxBatches, timeout: cfg.RedisTimeout, step: h.evict}, nil
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
	step := func(ctx context.Context, max int) (int, error) {
		n, err := evictMembersScript.Run(ctx, rdb, keys, max, unit).Int()
		if err != nil {
			return n, fmt.Errorf("evict members of %s: %w", key, err)
		}
		return n, nil
	}
	name := cmp.Or(cfg.Name, jobName("evict-members", key))
	return &countJob{name: name, batch: cfg.Batch, maxBatches: cfg.MaxBatches, timeout: cfg.RedisTimeout, step: step}, nil
}
