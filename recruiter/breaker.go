package recruiter

import (
	"sync/atomic"
	"time"
)

// breaker stops recruitment from touching Redis after threshold consecutive
// failures, for cooldown; then a single slice probes, and its success
// closes the breaker again. Meanwhile, once every fifth of the cooldown,
// one slice may first check whether Redis answers again (one cheap read):
// if it does, that slice probes at once rather than at the cooldown's end.
// Failed checks change nothing, so Redis sees at most one check per
// interval from each process, whatever the traffic.
type breaker struct {
	threshold int32
	cooldown  time.Duration

	failures  atomic.Int32
	openUntil atomic.Int64 // unix ns; 0 when closed
	probing   atomic.Bool
	checkAt   atomic.Int64 // unix ns from which an open breaker lets one slice check Redis
	checking  atomic.Bool
}

// checksPerCooldown is how many times, at most, an open breaker checks
// whether Redis answers again before its cooldown ends: with the default
// 5s cooldown, once a second, so stolen work is back within about a
// second of Redis (a Sentinel failover's promoted master, say) rather
// than up to a cooldown later.
const checksPerCooldown = 5

// checkEveryMin bounds how often an open breaker checks: with a cooldown
// of a second or less the probe itself comes as soon, and no check is made.
const checkEveryMin = time.Second

func (b *breaker) checkEvery() time.Duration {
	return max(b.cooldown/checksPerCooldown, checkEveryMin)
}

// gate is the breaker's verdict on a slice.
type gate uint8

const (
	gateShut  gate = iota // open: no Redis call now
	gatePass              // closed, or the probe: on to the lock
	gateCheck             // open: check that Redis answers, report it (checked), then pass
)

// allows is the draw's cheap check: closed, or open but ready for a probe
// or a check.
func (b *breaker) allows(now time.Time) bool {
	until := b.openUntil.Load()
	if until == 0 {
		return true
	}
	n := now.UnixNano()
	return n >= until && !b.probing.Load() || n >= b.checkAt.Load() && n < until && !b.checking.Load()
}

// admit lets a slice through: always when closed; when the cooldown has
// passed, exactly one slice, the probe; before that, once per checkEvery,
// one slice to check Redis, which must report with checked (never while
// the probe is due: a check then would only add a dial).
func (b *breaker) admit(now time.Time) gate {
	switch {
	case b.pass(now):
		return gatePass
	case now.UnixNano() >= b.checkAt.Load() && now.UnixNano() < b.openUntil.Load() && b.checking.CompareAndSwap(false, true):
		return gateCheck
	}
	return gateShut
}

// pass lets a slice on to the lock when the breaker is closed, or takes
// the probe when it is due; never a check. A slice whose check found
// Redis answering calls it next.
func (b *breaker) pass(now time.Time) bool {
	until := b.openUntil.Load()
	return until == 0 || now.UnixNano() >= until && b.probing.CompareAndSwap(false, true)
}

// checked records the outcome of a check that admit allowed. When Redis
// answered, the probe is due at once.
func (b *breaker) checked(answered bool, now time.Time) {
	n := now.UnixNano()
	b.checkAt.Store(n + b.checkEvery().Nanoseconds())
	for answered {
		until := b.openUntil.Load()
		if until == 0 || until <= n || b.openUntil.CompareAndSwap(until, n) {
			break
		}
	}
	b.checking.Store(false)
}

// succeed records a Redis call that worked.
func (b *breaker) succeed() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
	}
	b.probing.Store(false)
}

// fail records a Redis call that failed and reports whether it opened the
// breaker (a failed probe re-opens it at once). The first check comes
// checkEvery after the failure.
func (b *breaker) fail(now time.Time) (opened bool) {
	n := b.failures.Add(1)
	if !b.probing.Load() && n < b.threshold {
		return false
	}
	b.checkAt.Store(now.Add(b.checkEvery()).UnixNano())
	b.openUntil.Store(now.Add(b.cooldown).UnixNano())
	b.probing.Store(false)
	return true
}

func (b *breaker) isOpen() bool { return b.openUntil.Load() != 0 }
