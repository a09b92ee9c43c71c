package qstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/worksteal/worksteal/internal/names"
)

// Bounds of a [TypeLimit].
const (
	typeRunningMax = 100_000
	typeRateMax    = 100_000
	typePerMax     = 24 * time.Hour
)

// TypeLimit bounds the items of one task type that the queue's claims
// lease, whichever process claims them. A claim reads an item's type
// from the start of its payload, as package tasks encodes it; plain items
// have none and are never limited. The zero TypeLimit is no limit.
type TypeLimit struct {
	// Running bounds the items of the type leased at once: an item holds
	// its place from its claim to its settle or release, or until its
	// lease expires (a crashed worker's place comes back with its lease).
	// 0: no bound.
	Running int
	// Rate bounds the claims of the type in any window of Per, a sliding
	// window on Redis's clock (ms). 0: no bound.
	Rate int
	// Per is Rate's window, 1ms to a day; 0 without Rate.
	Per time.Duration
}

func (l TypeLimit) validate(typ string) error {
	if err := names.Check(typ); err != nil {
		return fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	switch {
	case l.Running < 0 || l.Running > typeRunningMax:
		return fmt.Errorf("%w: %s: Running %d is not in [0, %d]", ErrInvalidArgument, typ, l.Running, typeRunningMax)
	case l.Rate < 0 || l.Rate > typeRateMax:
		return fmt.Errorf("%w: %s: Rate %d is not in [0, %d]", ErrInvalidArgument, typ, l.Rate, typeRateMax)
	case l.Rate > 0 && (l.Per < time.Millisecond || l.Per > typePerMax):
		return fmt.Errorf("%w: %s: Per %v is not in [1ms, %v]", ErrInvalidArgument, typ, l.Per, typePerMax)
	case l.Rate == 0 && l.Per != 0:
		return fmt.Errorf("%w: %s: Per %v without a Rate", ErrInvalidArgument, typ, l.Per)
	}
	return nil
}

// SetTypeLimit sets the limits of the task type typ for every process
// that claims from the queue, from its next claim; the zero TypeLimit
// lifts them. Items that a tighter limit finds leased keep their leases.
func (q *Store) SetTypeLimit(ctx context.Context, typ string, l TypeLimit) error {
	if err := l.validate(typ); err != nil {
		return err
	}
	if l == (TypeLimit{}) {
		return q.wrap("set type limit", q.rdb.HDel(ctx, q.k.typeLimits, typ).Err())
	}
	v := fmt.Sprintf("%d %d %d", l.Running, l.Rate, ceilMillis(l.Per))
	return q.wrap("set type limit", q.rdb.HSet(ctx, q.k.typeLimits, typ, v).Err())
}

// TypeLimits returns the limits of the queue's task types, by type.
func (q *Store) TypeLimits(ctx context.Context) (map[string]TypeLimit, error) {
	raw, err := q.rdb.HGetAll(ctx, q.k.typeLimits).Result()
	if err != nil {
		return nil, q.wrap("type limits", err)
	}
	out := make(map[string]TypeLimit, len(raw))
	for typ, v := range raw {
		f := strings.Fields(v)
		if len(f) != 3 {
			continue // not ours: the claims ignore it too
		}
		running, err1 := strconv.Atoi(f[0])
		rate, err2 := strconv.Atoi(f[1])
		per, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out[typ] = TypeLimit{Running: running, Rate: rate, Per: time.Duration(per) * time.Millisecond}
	}
	return out, nil
}

// TypeOf returns the task type at the start of payload as the scripts
// read it (typeOf in types.lua), "" for none: package tasks's tests check
// that its envelopes agree.
func TypeOf(payload []byte) string {
	if len(payload) < 2 || (payload[0] != 1 && payload[0] != 2) || payload[1] == 0 {
		return ""
	}
	n, at := int(payload[1]), 2
	if n >= 128 {
		if n != 128 || len(payload) < 3 || payload[2] != 1 {
			return ""
		}
		at = 3
	}
	if len(payload) < at+n {
		return ""
	}
	return string(payload[at : at+n])
}
