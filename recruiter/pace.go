package recruiter

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// Automatic pace ([JobConfig] with Every and no Rate) runs a job about once
// per slot: Redis's clock cut into Every-long slots, the same for every
// process. The first visit of a slot to the job's lock takes the slot's
// run; a visit that finds the run taken learns when the slot ends and
// stays away until then.
//
// A process does not visit on every enlistment: it plans its visits in
// time, at random gaps whose mean is the fleet's size in slots over
// visitsPerSlot, so that the fleet's visits in a slot are about
// visitsPerSlot whatever the traffic; the first enlistment after the
// planned time visits. Between visits the job is cooling off, and a draw
// that picks it is dismissed without a Redis call. A process late to its
// plan (it had no enlistment) plans the next one earlier by as much.
//
// No process knows the fleet's size: each visit carries its weight, the
// mean slots between its process's visits; the acquire script sums a
// slot's weights (each process adds one per slot on average: the
// Horvitz-Thompson estimator), smooths the sums over slots, and hands the
// estimate back. So a process learns the fleet's size on the round trip it makes
// anyway. A slot no one visited counts as zero, which shortens the gaps.
//
// Random visits alone leave a slot unvisited now and then, and after a
// scale-in the survivors keep the old fleet's long gaps until their next
// visit (400 slots from 1,000 processes). So one process carries the job:
// the oldest that visits (the acquire script keeps its start; a visit of
// an older one, or any once the carrier has been silent a slot and a
// half, takes over). The carrier visits every slot, a little after the
// random visits aimed at its start, as well as its random plan, at no
// weight in the count. A scale-in, which removes the newest processes
// first (Kubernetes' rule), leaves it in place, so the cadence does not
// depend on what the survivors know. The youngest other process that
// visits watches it: it visits every watchEvery-th slot, at no weight,
// and takes the carrier's place once it has been silent. So when the
// oldest processes go (a crash, a lost node), the watcher restarts the
// visits within watchEvery + 1.5 slots. When both go, the first random
// visit of a survivor takes over: after a shrink by k (old size over
// new), on average k / visitsPerSlot slots on.
//
// A busy survivor also learns sooner than its next visit: a scale-in shows
// locally when the traffic stays: each survivor's share of it jumps. So a
// process counts its dismissed draws of the job in windows of rateWindow
// and, when a window's rate is rateJump times its usual one or more,
// takes the fleet to have shrunk by as much: it plans from that size,
// drawing its next visit afresh without a Redis call, and for guessSlots
// it plans from no more than it, since the count, smoothed over slots,
// still remembers the old fleet. Its visits weigh the gaps it plans, so
// the count stays sound. A burst of traffic on a fleet that did not
// shrink costs more visits for a few slots: a visit that finds the count
// unmoved ends the guess.

// watchEvery is how many slots (or ticks) apart the carrier's watcher
// visits: a carrier gone silent (a slot and a half) is replaced within
// watchEvery + 1.5 slots by the watcher, at 1/watchEvery round trips a
// slot.
const watchEvery = 8

// visitsPerSlot is what automatic pace aims for: the random visits a slot
// gets, fleet-wide, beside the carrier's. They keep the count and restart
// the carrier's visits when its process is gone; a slot the carrier
// misses goes without a visit with chance e^-1.5 = 22 %. Each visit is
// one round trip: about 2.5 a run with the carrier's.
const visitsPerSlot = 1.5

// paceYoung is how many slots the fleet's count must have seen before a
// process plans its gaps from it. Until then each process visits every
// paceYoungGap slots on average (the count stays sound: each visit weighs
// its process's mean gap), so a fleet that starts at once settles within
// a few slots more, at a cost of about visits 1 + paceYoung/paceYoungGap
// per process, once.
const (
	paceYoung    = 8
	paceYoungGap = 2
)

// backlogTimeShare bounds a backlog's pace: a process that knows of one
// gives it at most this share of its time, the slices and their gaps.
const backlogTimeShare = 0.25

// rateWindow is how many dismissed draws of an automatically paced job a
// process counts before it compares their rate with its usual one: at 32,
// chance alone gives three times the rate about once in ten million
// windows. rateJump is the rise at which it takes the fleet to have
// shrunk.
const (
	rateWindow = 32
	rateJump   = 3
)

// pace is automatic pace, the mode of a job with Every and no Rate: this
// process's plan for it.
type pace struct {
	phase      time.Duration // where the job's slots begin, from its name, so that jobs of one Every are not due at once
	continuing atomic.Bool   // the last slice here left a backlog: this process continues it, its visits planned by the streak

	gapMean  atomic.Int64 // ns: the mean gap between this process's visits, from the fleet's size
	interval atomic.Int64 // ns: the mean gap as last planned, which a visit weighs
	planned  atomic.Int64 // unix ns of the planned visit (at first: the job's registration)
	resume   atomic.Int64 // unix ns of the random visit that a successor visit stands before; 0: the planned visit is random
	late     atomic.Int64 // ns by which visits come after their plan, smoothed
	floor    atomic.Int64 // unix ns before which the last visit said the job cannot run

	windowStart atomic.Int64 // unix ns the window of draws began
	rate        floatBox     // dismissed draws per ns, smoothed over windows; 0 until the first ends
	traffic     floatBox     // the fleet's size times rate, as learnt before a jump in rate
	learnt      floatBox     // the fleet's size as learnt before the jump
	jumped      atomic.Int64 // unix ns of the jump
	guessUntil  atomic.Int64 // unix ns until which the size traffic and rate imply caps the learnt one
}

// newPace is the pace of the job name, registered at now.
func newPace(name string, every time.Duration, now time.Time) *pace {
	h := fnv.New64a()
	h.Write([]byte(name))
	p := &pace{phase: time.Duration(h.Sum64()%uint64(every.Milliseconds())) * time.Millisecond}
	p.planned.Store(now.UnixNano())
	p.windowStart.Store(now.UnixNano())
	return p
}

// visit: a backlog's visits, the carrier's and a woken one weigh nothing
// in the count, which sums the random visits plan makes (a streak's
// visits, several a slot, would swell it, and the fleet would come back
// less often once the backlog ends).
func (p *pace) visit(e *entry, woken bool, _ time.Time) visit {
	every := e.cfg.Every
	v := visit{carrierSilence: every + every/2, watcherSilence: 2 * watchEvery * every}
	switch {
	case woken:
		v.kind = visitWoken
	case p.continuing.Load():
		v.kind = visitBacklog
	case p.successor():
		v.kind = visitCarrier
	}
	weight := 0.0
	if v.kind == visitPlanned {
		weight = p.weight(every)
	}
	keep := acquireKeep * max(every, e.lock.ttl)
	v.args = []any{"pace", every.Milliseconds(), p.phase.Milliseconds(), keep.Milliseconds(), strconv.FormatFloat(weight, 'g', -1, 64)}
	return v
}

// learn plans the next visit: a woken visit leaves the plan as it was, the
// carrier's (or watcher's) resumes it, any other plans afresh; and the
// carrier visits the next slot too, its watcher the watchEvery-th.
func (p *pace) learn(s *slice, v visit, _ time.Time) {
	g, every := s.g, s.e.cfg.Every
	if v.kind == visitBacklog && g.state != lockTaken {
		// Another process carries the backlog on, or it has ended: this
		// process's next visits are plan's again.
		p.continuing.Store(false)
	}
	switch v.kind {
	case visitWoken:
		if planned := time.Unix(0, p.planned.Load()); planned.After(s.until) {
			s.until = planned
		}
		return
	case visitCarrier:
		s.until = p.resumed(g, every, s.taken, s.until)
	default:
		s.until = p.plan(g, every, s.taken, s.until)
	}
	switch {
	case g.carry:
		s.until = p.succeed(s.taken, g.left, every, s.until)
	case g.watch:
		s.until = p.succeed(s.taken, g.left+(watchEvery-1)*every, every, s.until)
	}
}

// handOn: a backlog's streak brings its process back sooner, so that the
// fleet follows the work rather than the pace; a slice that found items
// holds it, as the producer is still at work. Outside a streak the lock
// is left to expire, saving a round trip, unless it would outlive the
// slot.
func (p *pace) handOn(ctx context.Context, s *slice, res result, now time.Time) error {
	e, g := s.e, s.g
	more := res.Outcome == OutcomeRan && res.More
	found := res.Outcome == OutcomeRan && res.Items > 0
	streak := g.streak
	switch {
	case more:
		streak++
	case streak > 0 && !found:
		streak--
	}
	p.continuing.Store(streak > 0)
	switch {
	case s.lock.seat != "":
		// A seat beside the lock's slice: the pace and the streak are that
		// slice's; a backlog brings this process back soon, and the timer
		// with it.
		if more {
			e.coolOff(p.backlog(e.cfg.Every, res.Duration, max(streak, 1), now))
		} else {
			e.coolOff(s.until)
		}
		return s.lock.release(ctx, releasePlain)
	case streak > 0:
		e.coolOff(p.backlog(e.cfg.Every, res.Duration, streak, now))
		mark := releaseHold
		if streak > g.streak {
			mark = releaseMore
		} else if streak < g.streak {
			mark = releaseLess
		}
		return s.lock.release(ctx, mark)
	case g.streak > 0:
		e.coolOff(s.until)
		return s.lock.release(ctx, releaseDone)
	case !s.woken && !e.woken.Load() && res.Duration <= e.cfg.Budget && e.lock.ttl+e.lock.ttl/8 < g.left:
		e.coolOff(s.until)
		return nil
	}
	e.coolOff(s.until)
	return s.lock.release(ctx, releasePlain)
}

// timerDue: the planned visit (or the timer's retry, again), past an
// eighth of Every (at most timerGraceMax) left to traffic, so that the
// visit still falls early in the slot it was aimed at; a backlog's at
// once: its process planned the next slice for itself.
func (p *pace) timerDue(e *entry, again time.Time) (time.Time, bool) {
	due := time.Unix(0, max(e.coolUntil.Load(), p.planned.Load(), again.UnixNano()))
	if p.continuing.Load() {
		return due, true
	}
	return due.Add(min(e.cfg.Every/8, timerGraceMax)), true
}

// weight is what a visit adds to the fleet's count: the slots between
// this process's visits, as planned (random gaps without memory, so its
// visits come at that rate at any moment, even just after a fleet started
// at once; its lateness is taken off its gaps), or its lateness if that
// is longer; at least one, the count of a process that visits every
// slot, or that has not yet learnt the pace.
func (p *pace) weight(every time.Duration) float64 {
	return min(max(float64(max(p.interval.Load(), p.late.Load()))/float64(every), 1), 1e9)
}

// fleet is the fleet's size this process last planned from; 0 until
// learnt.
func (p *pace) fleet(e *entry) float64 {
	return float64(p.gapMean.Load()) / float64(e.cfg.Every) * visitsPerSlot
}

// plan learns from an acquire the fleet's size and plans the next visit:
// a random gap of mean (size / visitsPerSlot) slots, less the lateness
// of past visits, at the start of a slot; never before until, when the
// acquire said the job cannot run.
func (p *pace) plan(g grant, every time.Duration, now, until time.Time) time.Time {
	// Lateness, smoothed; the first is the wait for this process's first
	// enlistment since it started, the best guess of its next waits.
	late := max(now.UnixNano()-p.planned.Load(), 0)
	if old := p.late.Load(); old != 0 {
		late = old + (late-old)/4
	}
	p.late.Store(max(late, 1))
	if g.fleet > 0 {
		fleet := g.fleet
		switch guess := p.guess(now); {
		case guess == 0:
		case p.shrank(fleet, guess, every, now):
			fleet = min(fleet, guess) // the count still remembers the old fleet
		default:
			p.guessUntil.Store(0) // the traffic rose; the fleet stayed
		}
		p.gapMean.Store(int64(fleet / visitsPerSlot * float64(every)))
	}
	mean := time.Duration(p.gapMean.Load())
	if g.left > 0 && g.folds < paceYoung {
		mean = min(mean, paceYoungGap*every)
	}
	gap := time.Duration(rand.ExpFloat64()*float64(mean)) - time.Duration(p.late.Load())
	p.interval.Store(int64(mean))
	next := now.Add(max(gap, 0))
	// Aimed at the start of its slot: the run then begins early in the
	// slot, and its lock expires before the next, so the slice needs no
	// release (a round trip) at its end.
	if end := now.Add(g.left); g.left > 0 && next.After(end) {
		next = end.Add(next.Sub(end) / every * every)
	}
	p.resume.Store(0)
	return p.settle(next, until)
}

// settle plans the visit at next, never before until, the time before
// which the acquire said the job cannot run.
func (p *pace) settle(next, until time.Time) time.Time {
	if next.Before(until) {
		next = until
	}
	p.floor.Store(until.UnixNano())
	p.planned.Store(next.UnixNano())
	return next
}

// carrierLag is how far into a slot the carrier's visit comes, as a
// share of Every: after the random visits aimed at the slot's start (and
// the pace timer's grace of an eighth), so that they take the runs they
// can and the carrier runs only the slots they left, not half of all
// runs; early enough that its run's lock ends within the slot.
const carrierLag = 1.0 / 16

// succeed plans the carrier's visit to the next slot (now + left, lagged
// by carrierLag) before its random visit (until), which it keeps for
// after. So a slot does not depend on random visits alone: the carrier
// visits each at one round trip, and random visits keep the count and
// restart the carrier's visits when its process is gone.
func (p *pace) succeed(now time.Time, left, every time.Duration, until time.Time) time.Time {
	at := now.Add(left + time.Duration(carrierLag*float64(every)))
	if !until.After(at) {
		return until // the random visit comes first
	}
	p.resume.Store(until.UnixNano())
	p.planned.Store(at.UnixNano())
	return at
}

// successor reports whether the planned visit is the carrier's visit,
// which weighs nothing in the count (the count sums random visits only).
func (p *pace) successor() bool { return p.resume.Load() != 0 }

// resumed follows the carrier's visit: the random visit it stood before
// is planned again, unless the count the visit learnt fell below half the
// fleet that plan assumed (the fleet shrank: the count folds each slot
// without a random visit as zero), in which case a fresh plan draws it
// sooner.
func (p *pace) resumed(g grant, every time.Duration, now, until time.Time) time.Time {
	if g.fleet > 0 && g.fleet/visitsPerSlot*float64(every) < float64(p.interval.Load())/2 {
		return p.plan(g, every, now, until)
	}
	return p.settle(time.Unix(0, p.resume.Swap(0)), until)
}

// guessSlots is how long a fleet size guessed from a jump in traffic caps
// what visits learn: the count forgets an old fleet by an eighth a slot,
// so after 40 slots less than 1 % of it is left.
const guessSlots = 40

// guess is the fleet's size that this process's traffic implies, as long
// as a jump in it is recent; 0 if none is.
func (p *pace) guess(now time.Time) float64 {
	if now.UnixNano() >= p.guessUntil.Load() {
		return 0 // (a guess begins only from a learnt size and rate: traffic > 0)
	}
	return max(p.traffic.Load()/p.rate.Load(), 1)
}

// shrank tells a fleet that shrank, as guessed, from one whose traffic
// rose: the count, which folds a slot in eighths and an empty slot as
// zero, forgets the old size as 7/8 to the power of the slots since the
// jump, whereas a fleet that did not shrink keeps its count. A count well
// above what a shrink leaves ends the guess.
func (p *pace) shrank(fleet, guess float64, every time.Duration, now time.Time) bool {
	slots := float64(now.UnixNano()-p.jumped.Load()) / float64(every)
	left := guess + (p.learnt.Load()-guess)*math.Pow(1-1.0/8, max(slots-1, 0))
	return fleet <= 1.5*left
}

// backlog plans the next slice of a job in a backlog streak, after its
// last slice, of duration d: Every/2^streak later, sooner as slices that
// report More grow the streak and later as slices that catch up shrink
// it, but never so soon that the slices take more than backlogTimeShare
// of the process's time.
func (p *pace) backlog(every, d time.Duration, streak int, now time.Time) time.Time {
	next := now.Add(backlogGap(every, d, streak))
	p.planned.Store(next.UnixNano())
	return next
}

// backlogGap is the gap before the next slice of a backlog.
func backlogGap(every, d time.Duration, streak int) time.Duration {
	return max(every>>min(streak, 62), time.Duration(float64(d)*(1/backlogTimeShare-1)))
}

// floatBox is a float64 shared without a lock.
type floatBox struct{ bits atomic.Uint64 }

func (f *floatBox) Load() float64   { return math.Float64frombits(f.bits.Load()) }
func (f *floatBox) Store(v float64) { f.bits.Store(math.Float64bits(v)) }

// reshare sets each job's share of the roll: fixed rates as configured;
// automatically paced jobs share what the fixed rates leave of 1 equally
// (their cool-offs, not their shares, pace them); a schedule takes none,
// its visits being the pace timer's, but with TrafficOnly, where they are
// enlistments' as an automatic job's.
func (r *Recruiter) reshare() {
	r.shareMu.Lock()
	defer r.shareMu.Unlock()
	entries := r.jobs.Load().entries
	fixed, shared := 0.0, 0
	for _, e := range entries {
		if _, ok := e.mode.(fixedRate); ok {
			fixed += e.cfg.Rate
		} else if r.sharesLeft(e.mode) {
			shared++
		}
	}
	for _, e := range entries {
		if r.sharesLeft(e.mode) {
			e.share.Store(max(1-fixed, 0) / float64(shared))
		}
	}
}

// sharesLeft reports whether a job of mode m shares what the fixed rates
// leave of the roll.
func (r *Recruiter) sharesLeft(m mode) bool {
	switch m.(type) {
	case *pace:
		return true
	case *ticks:
		return r.cfg.TrafficOnly
	}
	return false
}
