package qstore

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
)

// badJitters are jitters outside [0, 1), and its bounds.
var badJitters = []float64{math.NaN(), math.Inf(-1), -1, -0.5, math.Copysign(0, -1), 0, 0.5,
	math.Nextafter(1, 0), 1, 1.5, math.MaxFloat64, math.Inf(1)}

// backoff stays within [d/2, d] whatever the jitter is: a negative one
// once reached Settle's script as the ack marker.
func TestBackoffClampsTheJitter(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{BackoffBase: time.Second, BackoffMax: 10 * time.Minute},
		{BackoffBase: 3 * time.Nanosecond, BackoffMax: 3 * time.Nanosecond}, // odd: d/2 rounds down
		{BackoffBase: time.Millisecond, BackoffMax: math.MaxInt64},
	} {
		for _, jitter := range badJitters {
			cfg.Jitter = func() float64 { return jitter }
			for attempt := 1; attempt <= 70; attempt++ {
				d := cfg.BackoffBase
				for i := 1; i < attempt && d < cfg.BackoffMax; i++ {
					if d > cfg.BackoffMax/2 {
						d = cfg.BackoffMax
					} else {
						d *= 2
					}
				}
				got := cfg.backoff(attempt)
				if got < d/2 || got > d {
					t.Fatalf("base %v, max %v, jitter %v, attempt %d: backoff %v, want within [%v, %v]",
						cfg.BackoffBase, cfg.BackoffMax, jitter, attempt, got, d/2, d)
				}
				if math.IsNaN(jitter) || jitter <= 0 {
					if got != d/2 {
						t.Fatalf("jitter %v, attempt %d: backoff %v, want d/2 = %v", jitter, attempt, got, d/2)
					}
				}
			}
		}
	}
}

// Settle's script tells an ack from a nack by the kind it is sent, not by
// the backoff: a nack whose backoff is negative or no number is retried at
// once, and a batch holding an unknown kind is refused, changing nothing.
func TestSettleScriptKinds(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	q := testStore(rdb, "kinds", Config{Prefix: redistest.Prefix(t), MaxAttempts: 5})
	ctx := context.Background()
	backoffs := []string{"-1", "-0", "nan", "-nan", "inf", "-inf", "1e400", "", "soon", "-9223372036854775808"}
	payloads := make([][]byte, len(backoffs)+1)
	for i := range payloads {
		payloads[i] = []byte("p")
	}
	if _, err := q.EnqueueBatch(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	items, err := q.Claim(ctx, len(payloads))
	if err != nil || len(items) != len(payloads) {
		t.Fatalf("Claim = %d items, %v", len(items), err)
	}
	run := func(kind, data, backoff string, its ...Item) ([]int64, error) {
		keys := append([]string(nil), q.k.settleKeys...)
		args := []any{q.cfg.ResultRetention.Milliseconds(), notifyTTL.Milliseconds(), q.cfg.MaxAttempts, encodingPin}
		for _, it := range its {
			keys = append(keys, q.k.notify(it.ID))
			args = append(args, it.ID, it.Token, kind, data, backoff)
		}
		return settleScript.Run(ctx, rdb, keys, args...).Int64Slice()
	}

	// Unknown kinds, "-1" the old ack marker among them, fail the call
	// before it writes, and a well-formed item sent with them is untouched.
	for _, kind := range []string{"", "x", "A", "-1", "ack", "nack"} {
		_, err := run(kind, "cause", "0", items[0])
		if err == nil || !strings.Contains(err.Error(), "kind") {
			t.Fatalf("kind %q: error %v, want one naming the kind", kind, err)
		}
		keys := append([]string(nil), q.k.settleKeys...)
		keys = append(keys, q.k.notify(items[0].ID), q.k.notify(items[1].ID))
		_, err = settleScript.Run(ctx, rdb, keys, q.cfg.ResultRetention.Milliseconds(), notifyTTL.Milliseconds(),
			q.cfg.MaxAttempts, encodingPin, items[0].ID, items[0].Token, "a", items[0].Token+":r", "0",
			items[1].ID, items[1].Token, kind, "cause", "0").Int64Slice()
		if err == nil {
			t.Fatalf("kind %q after an ack: no error", kind)
		}
	}
	if s, err := q.Depth(ctx); err != nil || s.Leased != int64(len(items)) {
		t.Fatalf("after the refused calls: Depth = %+v, %v; want all %d leased", s, err, len(items))
	}

	for i, backoff := range backoffs {
		it := items[i]
		before := time.Now()
		codes, err := run("n", "boom", backoff, it)
		if err != nil || len(codes) != 1 || codes[0] != 2 {
			t.Fatalf("nack with backoff %q: codes %v, %v; want [2] (delayed)", backoff, codes, err)
		}
		due, err := rdb.ZScore(ctx, q.k.delayed, it.ID).Result()
		if err != nil {
			t.Fatalf("nack with backoff %q: not delayed: %v", backoff, err)
		}
		if late := time.UnixMilli(int64(due)).Sub(before); late > time.Minute || late < -time.Minute {
			t.Fatalf("nack with backoff %q: due %v from now, want at once", backoff, late)
		}
		if n, err := rdb.HExists(ctx, q.k.results, it.ID).Result(); n || err != nil {
			t.Fatalf("nack with backoff %q: a result is stored (%v)", backoff, err)
		}
		if cause, err := rdb.HGet(ctx, q.k.causes, it.ID).Result(); cause != "boom" || err != nil {
			t.Fatalf("nack with backoff %q: cause %q, %v", backoff, cause, err)
		}
	}

	// An ack ignores the backoff, whatever it is.
	last := items[len(items)-1]
	if codes, err := run("a", last.Token+":done", "-1", last); err != nil || len(codes) != 1 || codes[0] != 1 {
		t.Fatalf("ack: codes %v, %v; want [1]", codes, err)
	}
	if r, err := q.Result(ctx, last.ID); string(r) != "done" || err != nil {
		t.Fatalf("Result = %q, %v; want done", r, err)
	}
	if s, err := q.Depth(ctx); err != nil || s.Delayed != int64(len(backoffs)) || s.Leased != 0 {
		t.Fatalf("Depth = %+v, %v; want %d delayed", s, err, len(backoffs))
	}
}
