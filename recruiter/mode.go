package recruiter

import (
	"context"
	"time"

	"github.com/worksteal/worksteal/internal/schedule"
)

// A job runs at one of three paces, fixed at registration, each a type
// that keeps its own planning: automatic pace (*pace, pace.go), a fixed
// rate (fixedRate, below) and a schedule (*ticks, schedule.go). A slice
// asks its job's mode once at each step (slice.go): what the visit tells
// the lock, what the process plans from the answer, how the lock is handed
// on after the run.
type mode interface {
	// visit is what a visit to e's lock sent at now tells the acquire
	// script; woken: an enqueue here asked for it.
	visit(e *entry, woken bool, now time.Time) visit
	// learn plans from the acquire's answer to v (s.g, taken at s.taken):
	// it may move s.until, until which this process stays away (the lock's
	// hold-off), and, when the visit took the lock, set s.tick.
	learn(s *slice, v visit, sent time.Time)
	// handOn hands the lock on once the slice's run ended with res, at
	// now, and sets the process's cool-off if the run changed it.
	handOn(ctx context.Context, s *slice, res result, now time.Time) error
	// timerDue is when the pace timer makes the planned visit, if no
	// enlistment made it first, and not before again (its retry of a
	// visit a gate held back); false: the mode has no plan in time.
	timerDue(e *entry, again time.Time) (time.Time, bool)
	// fleet is the processes that visit the job, as this process last
	// learnt; 0 while unknown, and for a fixed rate.
	fleet(e *entry) float64
}

// newMode is the mode of a job of cfg, registered at now.
func newMode(name string, cfg JobConfig, rcfg Config, now time.Time) mode {
	switch {
	case cfg.Schedule != "":
		s, _ := schedule.Parse(cfg.Schedule) // validated at registration
		return newTicks(s, rcfg.tickDenseGap, now)
	case cfg.Rate == 0:
		return newPace(name, cfg.Every, now)
	}
	return fixedRate{}
}

// fixedRate is a job with [JobConfig].Rate: a share of enlistments visits
// it, and a run with Every makes it rest that long, fleet-wide.
type fixedRate struct{}

func (fixedRate) visit(_ *entry, woken bool, _ time.Time) visit {
	v := visit{args: []any{"rate"}}
	if woken {
		v.kind = visitWoken
	}
	return v
}

func (fixedRate) learn(*slice, visit, time.Time) {}

// handOn: with Every the lock becomes the job's rest for what is left of
// it; without, it is released, this process resting the job for one
// budget, so that an idle job cannot turn request traffic into Redis
// traffic. A backlog (More) releases it at once.
func (fixedRate) handOn(ctx context.Context, s *slice, res result, now time.Time) error {
	e := s.e
	more := res.Outcome == OutcomeRan && res.More
	remaining := e.cfg.Every - res.Duration
	switch {
	case s.lock.seat != "":
		// A seat beside the lock's slice: its rest is that slice's; a
		// backlog brings this process back soon.
		if more {
			e.coolOff(now.Add(backlogGap(e.cfg.Every, res.Duration, 1)))
		} else {
			e.coolOff(s.until)
		}
		return s.lock.release(ctx, releasePlain)
	case more:
		return s.lock.release(ctx, releasePlain)
	case remaining > time.Millisecond:
		e.coolOff(now.Add(remaining))
		return s.lock.rest(ctx, remaining)
	}
	e.coolOff(now.Add(e.cfg.Budget))
	return s.lock.release(ctx, releasePlain)
}

func (fixedRate) timerDue(*entry, time.Time) (time.Time, bool) { return time.Time{}, false }

func (fixedRate) fleet(*entry) float64 { return 0 }
