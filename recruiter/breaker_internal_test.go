package recruiter

import (
	"testing"
	"time"
)

// openBreaker is a breaker opened at t0 by threshold failures.
func openBreaker(t *testing.T, t0 time.Time) *breaker {
	t.Helper()
	b := &breaker{threshold: 2, cooldown: 5 * time.Second}
	if b.fail(t0) || !b.fail(t0) || !b.isOpen() {
		t.Fatal("two failures at threshold 2 must open the breaker, on the second")
	}
	return b
}

// An open breaker that learns Redis answers lets one slice probe at once,
// long before its cooldown ends.
func TestBreakerProbesOnceACheckFindsRedisAnswering(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	b := openBreaker(t, t0)
	every := b.checkEvery()
	if every != time.Second {
		t.Fatalf("checkEvery = %v, want a fifth of the 5s cooldown", every)
	}

	early := t0.Add(every - time.Millisecond)
	if b.allows(early) || b.admit(early) != gateShut {
		t.Fatal("the breaker lets a slice through before the first check is due")
	}
	at := t0.Add(every)
	if !b.allows(at) {
		t.Fatal("a draw is refused when a check is due")
	}
	if g := b.admit(at); g != gateCheck {
		t.Fatalf("admit with a check due = %v, want gateCheck", g)
	}
	if g := b.admit(at); g != gateShut || b.allows(at) {
		t.Fatalf("a second slice got %v while the check is under way, want gateShut", g)
	}

	b.checked(true, at)
	if !b.isOpen() {
		t.Fatal("a check closed the breaker: only the probe's success may")
	}
	if !b.allows(at) || !b.pass(at) {
		t.Fatalf("after Redis answered a check %v into a %v cooldown, no probe was let through", every, b.cooldown)
	}
	if b.pass(at) || b.admit(at) != gateShut {
		t.Fatal("a second probe, or a check, was let through beside the first")
	}
	b.succeed()
	if b.isOpen() || b.admit(at) != gatePass {
		t.Fatal("the probe's success did not close the breaker")
	}
}

// A check that finds Redis still down changes nothing but the time of the
// next check: no probe before the cooldown, one check per interval.
func TestBreakerFailedCheckWaitsForTheNext(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	b := openBreaker(t, t0)
	every := b.checkEvery()

	checks := 0
	for now := t0; now.Before(t0.Add(b.cooldown)); now = now.Add(10 * time.Millisecond) {
		switch b.admit(now) {
		case gatePass:
			t.Fatalf("a slice passed %v after the breaker opened, before its %v cooldown, with Redis down", now.Sub(t0), b.cooldown)
		case gateCheck:
			checks++
			b.checked(false, now)
		}
	}
	if want := int(b.cooldown/every) - 1; checks != want {
		t.Fatalf("%d checks during a %v cooldown, want %d: one per %v, the first %v after the failures", checks, b.cooldown, want, every, every)
	}
	end := t0.Add(b.cooldown)
	if g := b.admit(end); g != gatePass {
		t.Fatalf("admit at the cooldown's end = %v, want the probe (gatePass)", g)
	}
	// The failed probe re-opens the breaker; the next check is an interval away.
	if !b.fail(end) {
		t.Fatal("a failed probe did not re-open the breaker")
	}
	if g := b.admit(end.Add(every - time.Millisecond)); g != gateShut {
		t.Fatalf("admit just before the next check = %v, want gateShut", g)
	}
	if g := b.admit(end.Add(every)); g != gateCheck {
		t.Fatalf("admit an interval after the failed probe = %v, want gateCheck", g)
	}
}

// A check that ends after the probe closed the breaker leaves it closed.
func TestBreakerCheckAfterCloseKeepsItClosed(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	b := openBreaker(t, t0)
	at := t0.Add(b.checkEvery())
	if b.admit(at) != gateCheck {
		t.Fatal("no check due")
	}
	b.succeed() // another slice's call worked meanwhile
	b.checked(true, at)
	if b.isOpen() || !b.pass(at) || !b.pass(at) {
		t.Fatal("a closed breaker must let every slice pass")
	}
}

// A cooldown of a second or less makes no check: the probe comes as soon,
// and a check beside it, or beside a failed probe's next one, would only
// add a dial to a Redis that is down.
func TestBreakerShortCooldownMakesNoCheck(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	b := &breaker{threshold: 1, cooldown: time.Second}
	if !b.fail(t0) {
		t.Fatal("a failure at threshold 1 must open the breaker")
	}
	for at := t0; at.Before(t0.Add(time.Second)); at = at.Add(100 * time.Millisecond) {
		if g := b.admit(at); g != gateShut {
			t.Fatalf("admit %v into a 1s cooldown = %v, want gateShut", at.Sub(t0), g)
		}
	}
	due := t0.Add(time.Second)
	if g := b.admit(due); g != gatePass {
		t.Fatalf("admit at the cooldown's end = %v, want the probe", g)
	}
	if g := b.admit(due); g != gateShut {
		t.Fatalf("a second slice beside the probe got %v, want gateShut", g)
	}
	b.fail(due) // the probe failed: open again
	for at := due; at.Before(due.Add(time.Second)); at = at.Add(100 * time.Millisecond) {
		if g := b.admit(at); g != gateShut {
			t.Fatalf("admit %v after a failed probe = %v, want gateShut", at.Sub(due), g)
		}
	}
}
