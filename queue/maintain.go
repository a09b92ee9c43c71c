package queue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// Settle's, Tidy's and Claim's dropExpired, prepended to their source.
	//go:embed expired.lua
	expiredSource string

	// The maintenance steps of Promote, Tidy and Claim, prepended to
	// their source.
	//go:embed maintain.lua
	maintainSource string

	//go:embed tidy.lua
	tidySource string
	tidyScript = redis.NewScript(expiredSource + maintainSource + tidySource)

	//go:embed promote.lua
	promoteSource string
	promoteScript = redis.NewScript(maintainSource + promoteSource)

	//go:embed requeue.lua
	requeueSource string
	requeueScript = redis.NewScript(requeueSource)

	//go:embed purge.lua
	purgeSource string
	purgeScript = redis.NewScript(purgeSource)

	//go:embed dead.lua
	deadSource string
	deadScript = redis.NewScript(deadSource)
)

// Tidy hands back up to max (at most [BatchMax]) expired leases, the
// longest expired first: to the tail of the queue, or to the dead letters
// if the item had its last attempt. It returns how many it handled; n ==
// max means more may be waiting. The last attempt is Config.MaxAttempts,
// or the item's own ([EnqueueOptions.MaxAttempts]). Every [Queue.Claim]
// does this first, up to its n: Tidy is for a queue nobody claims from
// for a while.
func (q *Queue) Tidy(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "tidy", tidyScript, q.k.tidyKeys, max, q.cfg.MaxAttempts)
}

// Promote moves up to max (at most [BatchMax]) delayed items whose time
// has come (retries, and items enqueued with [EnqueueOptions.Delay]) to
// the tail of the queue, the earliest due first. It returns how many it
// moved; n == max means more may be due. Every [Queue.Claim] does this
// first, up to its n: Promote is for a queue nobody claims from for a
// while.
func (q *Queue) Promote(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "promote", promoteScript, q.k.promoteKeys, max)
}

// RequeueDead moves up to max (at most [BatchMax]) dead letters, the
// oldest first, back to the tail of the queue with a fresh count of
// attempts (an item keeps its own [EnqueueOptions.MaxAttempts]). It
// returns how many it moved.
func (q *Queue) RequeueDead(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "requeue dead", requeueScript, q.k.requeueKeys, max)
}

// PurgeDead deletes up to max (at most [BatchMax]) dead letters, the
// oldest first, with their values. It returns how many it deleted.
func (q *Queue) PurgeDead(ctx context.Context, max int) (n int, err error) {
	return q.runCount(ctx, "purge dead", purgeScript, q.k.purgeKeys, max)
}

func (q *Queue) runCount(ctx context.Context, op string, s *redis.Script, keys []string, max int, args ...any) (int, error) {
	if err := checkCount(op+" max", max); err != nil {
		return 0, err
	}
	n, err := s.Run(ctx, q.rdb, keys, append([]any{max}, args...)...).Int()
	return n, q.wrap(op, err)
}

// DeadItem is a dead letter, as listed by [Queue.Dead].
type DeadItem struct {
	ID       string
	Attempts int       // claims it had
	Cause    string    // why it died: the last Nack's cause, or Tidy's or Claim's note
	Died     time.Time // by Redis's clock
}

// Dead lists up to max (at most [BatchMax]) dead letters, the oldest first,
// without changing them. Their payloads are still there for [Queue.Value].
func (q *Queue) Dead(ctx context.Context, max int) ([]DeadItem, error) {
	if err := checkCount("dead max", max); err != nil {
		return nil, err
	}
	reply, err := deadScript.Run(ctx, q.rdb, q.k.deadKeys, max).Slice()
	if err != nil {
		return nil, q.wrap("dead", err)
	}
	if len(reply)%4 != 0 {
		return nil, q.wrap("dead", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	items := make([]DeadItem, 0, len(reply)/4)
	for i := 0; i < len(reply); i += 4 {
		id, _ := reply[i].(string)
		died, _ := reply[i+1].(int64)
		cause, _ := reply[i+2].(string)
		attempts, _ := reply[i+3].(int64)
		items = append(items, DeadItem{ID: id, Died: time.UnixMilli(died), Cause: cause, Attempts: int(attempts)})
	}
	return items, nil
}
