package drain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/wakeup"
	"github.com/worksteal/worksteal/internal/worksqueue"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Handler does the work of one claimed item, as a jobs.Handler does, and
// may return the item that follows it: next, when not nil, is enqueued by
// the item's ack, in the same script call, so that it is added once, and
// only if the ack is. A failed item's next is dropped.
type Handler func(ctx context.Context, it qstore.Item) (result []byte, next *qstore.FollowUp, err error)

// New returns the job that works q off with handler: jobs.Drain's, whose
// doc states what it promises.
func New(q *queue.Queue, handler Handler, cfg Config) (recruiter.Job, error) {
	switch {
	case q == nil:
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	case handler == nil:
		return nil, fmt.Errorf("%w: nil handler", ErrInvalidArgument)
	}
	cfg.Batching = cfg.Batching.WithDefaults(batchDefault)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, concurrencyDefault)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > concurrencyMax {
		return nil, fmt.Errorf("%w: Concurrency %d is not in [1, %d]", ErrInvalidConfig, cfg.Concurrency, concurrencyMax)
	}
	return &drainJob{q: qstore.Of(q), handler: handler, cfg: cfg, name: cmp.Or(cfg.Name, JobName("drain", q.Name())),
		queueMark: worksqueue.New(q.Config().Prefix, q.Name(), qstore.ScriptCommands)}, nil
}

type drainJob struct {
	queueMark               // for the recruiter's check of its prefix
	q         *qstore.Store // the queue's storage, for follow-ups
	handler   Handler
	cfg       Config
	name      string
	// itemMean is the mean handler time, ns, smoothed over slices: with
	// handlers side by side, a slice's first batch claims what they
	// finish in its budget, not a whole Batch to hand most of it back.
	itemMean atomic.Int64
	// handlers is how many handlers run at once as the latest slice left
	// it (see cpuLimit); 0 before the first: Concurrency.
	handlers atomic.Int64
	// dedicated: Serve runs the job, in a worker that serves no requests,
	// so its handlers may burn every CPU. Set before the first slice.
	dedicated bool
}

type queueMark = worksqueue.Mark

func (j *drainJob) Name() string { return j.name }

// Finish is how long past its budget a slice may take to finish the
// handlers it started: up to their lease, which bounds their contexts
// (see [recruiter.Finisher]).
func (j *drainJob) Finish() time.Duration { return j.q.Config().Lease }

// Slices is how many slices of a drain run at once across the fleet by
// default ([recruiter.SideBySide]): each has Concurrency handlers.
func (j *drainJob) Slices() int { return drainSlicesDefault }

// drainSlicesDefault: four processes at once, each with its handlers,
// while a backlog lasts or enqueues wake them.
const drainSlicesDefault = 4

// Bell is the queue's bell: the recruiter visits the job soon after this
// process enqueues into it.
func (j *drainJob) Bell() *wakeup.Bell { return j.q.Bell() }

// rttFloor is the least round trip a slice assumes: one measured on an
// idle Redis says little about the next.
const rttFloor = time.Millisecond

// drainSlice is the state of one slice: what it measured, what it did.
type drainSlice struct {
	rtt      time.Duration // of the slowest Claim or finish, at least rttFloor: the estimate of one round trip
	busy     time.Duration // in handlers
	slowest  time.Duration // the slowest item so far
	started  int           // items handed to the handler
	done     int           // items whose handler returned
	yielded  bool          // the process was busy: no more items started
	handlers int           // how many handlers run at once (see cpuLimit)
	panicked error         // the first panic, with its stack
	report   recruiter.Report
}

// meanItem is the mean handler time so far; 0 before the first item.
func (s *drainSlice) meanItem() time.Duration {
	if s.done == 0 {
		return 0
	}
	return s.busy / time.Duration(s.done)
}

// drainBatch is the items of one claim.
type drainBatch struct {
	items []qstore.Item
	// full: the claim leased all it asked for, or said more may be due.
	full bool
	// leaseEnd is when the items' leases end, by this process's clock: the
	// leases began no earlier than the claim was sent (claim.lua rounds
	// Redis's TIME up), so counted from then the end is never later than
	// Redis's, whatever the skew.
	leaseEnd time.Time
	// leaseGone is when the leases have surely ended, by this process's
	// clock: counted from the claim's reply, since they began before it.
	leaseGone time.Time
	// watch keeps canceled items from starting, and ends the contexts of
	// running ones (see cancelWatch).
	watch *cancelWatch
}

// Run works in batches, and overlaps Redis's work with the handlers':
// while one batch is handled, the previous one is settled and, when the
// budget left fits more, the next one claimed. The claim goes after the
// settle when the settle enqueues follow-ups, so that it takes them;
// otherwise the settle may go on while the next batch is handled.
func (j *drainJob) Run(ctx context.Context) (recruiter.Report, error) {
	s := &drainSlice{rtt: rttFloor, handlers: j.handlersLearnt()}
	defer j.learn(s)
	if err := ctx.Err(); err != nil {
		return s.report, j.wrap(err)
	}
	limit := BatchLimit(ctx, j.cfg.MaxBatches)
	first := j.step(ctx, nil, j.firstFit(ctx))
	s.absorb(first)
	if first.err != nil {
		return s.report, j.wrap(first.err)
	}
	cur, claims := first.next, 1
	var handled []qstore.Settlement // the previous batch's outcomes, not yet settled
	var pending *settleCall         // a settle left under way by the last step
	for {
		ahead := 0
		if claims < limit && cur.full {
			ahead = j.ahead(ctx, s, len(cur.items))
		}
		var st stepResult
		var stepping sync.WaitGroup
		if len(handled) > 0 || ahead > 0 {
			running := cur.watch
			stepping.Go(func() {
				st = j.step(ctx, handled, ahead)
				if st.next != nil {
					running.follow(st.next.watch) // its polls read the next batch's items too
				}
			})
		}
		outcomes := j.handle(ctx, s, cur)
		stepping.Wait()
		s.absorb(st)
		// A settle goes on while the next batch is claimed and handled:
		// Redis then always has a call to run. At most two are under way.
		done := pending.wait()
		s.absorb(done)
		st.err = errors.Join(done.err, st.err)
		pending = st.later
		if st.err != nil || st.next == nil || len(outcomes) < len(cur.items) {
			done := pending.wait()
			s.absorb(done)
			st.err = errors.Join(st.err, done.err)
			pending = nil
		}
		last := cur
		if st.next != nil {
			claims++
			last = st.next
		}
		n := 0 // the next claim's size, when none was made ahead
		if st.err == nil && st.next == nil && len(outcomes) == len(cur.items) && claims < limit &&
			(cur.full || followed(outcomes)) && !s.yielded {
			n = j.fit(ctx, s)
		}
		if st.err != nil || st.next == nil && n == 0 || len(outcomes) < len(cur.items) {
			// The end: the last outcomes settled, what was not started
			// handed back, at once.
			unstarted := cur.items[len(outcomes):]
			if st.next != nil {
				unstarted = append(slices.Clip(unstarted), st.next.items...)
			}
			settled, released, err := j.finish(ctx, outcomes, unstarted)
			s.report.Items += settled
			// The claim's maintenance stopped at its bound: more may be due
			// or expired, though few items were pending (they may have gone
			// to the dead letters, or be claimed by the next batch).
			s.report.More = last.full || released > 0
			if err = errors.Join(st.err, err); err != nil {
				return s.report, j.wrap(err)
			}
			break
		}
		if st.next != nil {
			cur, handled = st.next, outcomes
			continue
		}
		// No batch was claimed ahead (the item time was unknown, or the
		// budget seemed short), or the queue was short of a batch but a
		// chain's next step, enqueued by an ack, is claimed at once.
		if err := ctx.Err(); err != nil {
			settled, _, ferr := j.finish(ctx, outcomes, nil)
			s.report.Items += settled
			s.report.More = true
			return s.report, j.wrap(errors.Join(err, ferr))
		}
		st = j.step(ctx, outcomes, n)
		s.absorb(st)
		pending = st.later
		if st.err != nil {
			done := pending.wait()
			s.absorb(done)
			s.report.More = true
			return s.report, j.wrap(errors.Join(st.err, done.err))
		}
		cur, handled, claims = st.next, nil, claims+1
	}
	if s.panicked != nil {
		return s.report, j.wrap(s.panicked)
	}
	return s.report, nil
}

// stepResult is what a step did.
type stepResult struct {
	settled int
	next    *drainBatch // nil when no claim was made
	later   *settleCall // the settle, when it goes on after the claim
	rtt     time.Duration
	err     error
}

// settleCall is a settle under way.
type settleCall struct {
	done sync.WaitGroup
	r    stepResult
}

// settleLater starts settling outcomes, and returns at once.
func (j *drainJob) settleLater(ctx context.Context, outcomes []qstore.Settlement) *settleCall {
	c := &settleCall{}
	c.done.Go(func() {
		began := time.Now()
		c.r.settled, c.r.err = j.settle(ctx, outcomes)
		c.r.rtt = time.Since(began)
	})
	return c
}

// wait waits for the settle and returns what it did; nothing for nil.
func (c *settleCall) wait() stepResult {
	if c == nil {
		return stepResult{}
	}
	c.done.Wait()
	return c.r
}

// step settles outcomes and claims a batch of n items unless n is 0. The
// claim goes after the settle when the settle enqueues follow-ups, so
// that it takes them (see Run); otherwise both go at once, so that Redis
// runs one while this process sends or reads the other, and the settle
// is left under way (later). It leaves s alone, since handlers use it
// meanwhile: Run absorbs the result.
func (j *drainJob) step(ctx context.Context, outcomes []qstore.Settlement, n int) (r stepResult) {
	if len(outcomes) > 0 {
		if n > 0 && !followed(outcomes) {
			r.later = j.settleLater(ctx, outcomes)
		} else {
			began := time.Now()
			r.settled, r.err = j.settle(ctx, outcomes)
			r.rtt = time.Since(began)
			if r.err != nil {
				return r
			}
		}
	}
	if n > 0 {
		began := time.Now()
		claimed, err := j.claim(ctx, n)
		returned := time.Now()
		r.rtt = max(r.rtt, returned.Sub(began))
		if r.err = err; err == nil {
			r.next = &drainBatch{
				items:     claimed.Items,
				full:      len(claimed.Items) == n || claimed.More,
				leaseEnd:  began.Add(j.q.Config().Lease),
				leaseGone: returned.Add(j.q.Config().Lease),
				// The claim found the items not canceled no sooner than began.
				watch: j.watchCancels(ctx, claimed.Items, began),
			}
		}
	}
	return r
}

// absorb counts a step's settled items and round trips in s.
func (s *drainSlice) absorb(r stepResult) {
	s.report.Items += r.settled
	s.rtt = max(s.rtt, r.rtt)
}

// firstFit is the first batch's size: a whole Batch, or with handlers
// side by side and their time known from earlier slices, as many as they
// finish in the budget, and at least one for each handler.
func (j *drainJob) firstFit(ctx context.Context) int {
	mean := time.Duration(j.itemMean.Load())
	left, ok := Remaining(ctx)
	handlers := j.handlersLearnt()
	if handlers == 1 || mean <= 0 || !ok {
		return j.cfg.Batch
	}
	waves := max(int64((left-3*rttFloor)/mean), 1)
	return int(min(int64(j.cfg.Batch), waves*int64(handlers)))
}

// learn smooths the slice's mean handler time into the job's, and keeps
// its number of handlers for the next slice.
func (j *drainJob) learn(s *drainSlice) {
	j.handlers.Store(int64(s.handlers))
	mean := s.meanItem()
	if mean <= 0 {
		return
	}
	old := time.Duration(j.itemMean.Load())
	if old > 0 {
		mean = old + (mean-old)/4
	}
	j.itemMean.Store(int64(mean))
}

// followed reports whether an ack of outcomes enqueued an item.
func followed(outcomes []qstore.Settlement) bool {
	for _, o := range outcomes {
		if o.Err == nil && o.FollowUp != nil {
			return true
		}
	}
	return false
}

// fit is how many items the next batch may claim: those that the
// slice's handlers, at the mean time so far, finish in the budget left
// after three round trips (the claim, the finish, and one to spare); 0
// when none does.
func (j *drainJob) fit(ctx context.Context, s *drainSlice) int {
	left, ok := Remaining(ctx)
	if !ok {
		return j.cfg.Batch
	}
	return j.fitIn(left-3*s.rtt, max(s.meanItem(), time.Microsecond), s.handlers)
}

// ahead is how many items to claim while a batch of handling items is
// handled: as fit, in the budget left after them; 0 while the time of an
// item is unknown (neither this slice nor earlier ones measured one), or
// without a deadline.
func (j *drainJob) ahead(ctx context.Context, s *drainSlice, handling int) int {
	mean := s.meanItem()
	if mean <= 0 {
		mean = time.Duration(j.itemMean.Load())
	}
	left, ok := Remaining(ctx)
	if mean <= 0 || !ok {
		return 0
	}
	waves := (handling + s.handlers - 1) / s.handlers
	return j.fitIn(left-time.Duration(waves)*mean-3*s.rtt, max(mean, time.Microsecond), s.handlers)
}

// fitIn is how many items of mean time handlers side by side finish in
// avail, at most Batch.
func (j *drainJob) fitIn(avail, mean time.Duration, handlers int) int {
	if avail < mean {
		return 0
	}
	return int(min(int64(j.cfg.Batch), int64(avail/mean)*int64(handlers)))
}

// handle runs the handler on the batch's items, up to s.handlers at once,
// starting them in order while the budget lasts and while the batch's
// lease fits the slowest item so far and the finish; it returns the
// outcomes of the items it started or found canceled, a prefix of items. A
// canceled item's outcome is the error ErrCanceled, whose settle finds its
// claim ended, as that of a handler whose item was canceled while it ran;
// the items after it start as they would have. Once the slice knows how
// long an item takes, it starts one only if it fits in the budget left;
// the first items of a slice start blind, so that an item slower than any
// budget still runs. A started handler is not cut at the budget: its
// context ends leaseMargin before the lease, since a settle or release
// that reaches Redis after the lease is thrown away (a claim or Tidy hands
// the items back, counting the attempt, and another claim may own them by
// then).
func (j *drainJob) handle(ctx context.Context, s *drainSlice, batch *drainBatch) []qstore.Settlement {
	items, leaseEnd := batch.items, batch.leaseEnd
	if len(items) == 0 {
		return nil
	}
	outcomes := make([]qstore.Settlement, len(items))
	// One deadline for the batch's handlers: its items share a lease, and
	// the margin changes only between batches.
	base, stop := handlersContext(ctx) // serve.go
	defer stop()
	hctx, cancel := context.WithDeadline(base, leaseEnd.Add(-j.leaseMargin(s)))
	defer cancel()
	hctx = context.WithValue(hctx, leaseGoneKey{}, batch.leaseGone)
	var (
		mu      sync.Mutex // guards s and next
		next    int        // items[:next] are started
		stopped bool
	)
	watch := batch.watch // see cancelwatch.go
	watch.begin()
	defer watch.close()
	// take hands out the next item to start and its handler's context,
	// passing over canceled ones, or -1 once none may start.
	take := func() (int, context.Context) {
		mu.Lock()
		defer mu.Unlock()
		for !stopped && next < len(items) && j.mayStart(ctx, s, leaseEnd) {
			ictx, verdict := watch.start(hctx, next)
			if verdict == startUnread {
				break
			}
			next++
			if verdict == startCanceled {
				outcomes[next-1] = qstore.Settlement{Item: items[next-1], Err: qstore.ErrCanceled}
				continue
			}
			s.started++
			return next - 1, ictx
		}
		stopped = true
		watch.halt()
		return -1, nil
	}
	workers, tiny := j.workers(s, len(items))
	// The handlers' CPU is sampled unless one handler at most may run
	// anyway, or the items are too short for its cost.
	measure := j.cfg.Concurrency > 1 && !tiny && !j.dedicated
	var cpu cpuSample // guarded by mu
	work := func() {
		var ran time.Duration // since this goroutine last yielded
		for i, ictx := take(); i >= 0; i, ictx = take() {
			it := items[i]
			began := time.Now()
			probe := startCPUProbe(measure && i%cpuSampleEvery == 0)
			result, follow, err := j.call(ictx, s, &mu, it)
			burnt, measured := probe.stop()
			watch.untrack(i)
			took := time.Since(began)
			mu.Lock()
			s.busy += took
			s.done++
			s.slowest = max(s.slowest, took)
			if measured {
				cpu.add(burnt, took)
			}
			mu.Unlock()
			outcomes[i] = qstore.Settlement{Item: it, Result: result, FollowUp: follow, Err: HandBack(ictx, err)}
			ran = yieldAfter(ran, took)
		}
	}
	if workers <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(work)
		}
		wg.Wait()
	}
	if cpu.took > 0 {
		s.handlers = j.cpuLimit(cpu)
	}
	return outcomes[:next]
}

// tinyItem is the mean item time below which a batch's handlers run one
// after another on the slice's goroutine: handing each item to another
// goroutine would cost more than the item, and waits so short gain
// nothing from overlapping.
const tinyItem = 20 * time.Microsecond

// workers is how many goroutines handle a batch of n items: up to
// s.handlers, or one when the items are known to be tiny (their mean, in
// this slice or else in earlier ones, below tinyItem, and none in this
// slice slower than a millisecond), so that a slow one soon brings the
// handlers back side by side.
func (j *drainJob) workers(s *drainSlice, n int) (workers int, tiny bool) {
	mean := s.meanItem()
	if mean <= 0 {
		mean = time.Duration(j.itemMean.Load())
	}
	if mean > 0 && mean < tinyItem && s.slowest < time.Millisecond {
		return 1, true
	}
	return min(s.handlers, n), false
}

// mayStart reports whether the slice may start another item: its budget
// is not spent, the budget left fits the slowest item so far and the
// finish, and so does the batch's lease. Called with s guarded.
func (j *drainJob) mayStart(ctx context.Context, s *drainSlice, leaseEnd time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	// Yield: once an item has started, a busy process starts no more, so
	// that a slice stops competing with requests (and sustained load
	// postpones the queue, never stops it).
	if s.started > 0 && recruiter.Busy(ctx) {
		s.yielded = true
		return false
	}
	if left, ok := Remaining(ctx); ok && s.done > 0 && left < s.slowest+2*s.rtt {
		return false
	}
	return time.Until(leaseEnd.Add(-j.leaseMargin(s))) > s.slowest
}

// leaseMargin is how long before the lease ends a handler's context ends,
// for the finish: three round trips, or a quarter of the lease (at most
// RedisTimeout, which bounds each call anyway) if that is more. The round
// trips so far are a poor guide to the next on a loaded machine, and an
// item that needs the whole of a lease is rare. It is at most half the
// lease: round trips that slow put any lease at risk, and a margin past
// the lease would claim and release batches without starting an item.
func (j *drainJob) leaseMargin(s *drainSlice) time.Duration {
	lease := j.q.Config().Lease
	return min(max(3*s.rtt, min(lease/4, j.cfg.RedisTimeout)), lease/2)
}

// call runs the handler on one item, turning a panic into the item's
// error; mu guards s.
func (j *drainJob) call(ctx context.Context, s *drainSlice, mu *sync.Mutex, it qstore.Item) (result []byte, next *qstore.FollowUp, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, next, err = nil, nil, fmt.Errorf("%w: %v", ErrHandlerPanic, v)
			mu.Lock()
			defer mu.Unlock()
			if s.panicked == nil {
				s.panicked = fmt.Errorf("%w on item %s: %v\n%s", ErrHandlerPanic, it.ID, v, debug.Stack())
			}
		}
	}()
	return j.handler(ctx, it)
}

func (j *drainJob) claim(ctx context.Context, n int) (qstore.Claimed, error) {
	rctx, cancel := RedisContext(ctx, j.cfg.RedisTimeout)
	defer cancel()
	return j.q.ClaimDetailed(rctx, n)
}

// finish settles the outcomes and hands back the unstarted items, at once:
// they touch different items, and both must reach Redis before the lease
// ends, so one round trip should fit both. It returns how many items were
// settled and how many released.
func (j *drainJob) finish(ctx context.Context, outcomes []qstore.Settlement, unstarted []qstore.Item) (settled, released int, err error) {
	var settleErr, releaseErr error
	var releasing sync.WaitGroup
	if len(unstarted) > 0 {
		releasing.Go(func() {
			rctx, cancel := RedisContext(ctx, j.cfg.RedisTimeout)
			defer cancel()
			released, releaseErr = j.q.Release(rctx, unstarted...)
		})
	}
	if len(outcomes) > 0 {
		settled, settleErr = j.settle(ctx, outcomes)
	}
	releasing.Wait()
	return settled, released, errors.Join(settleErr, releaseErr)
}

// settle acks and nacks outcomes in one call, and returns how many it
// settled.
func (j *drainJob) settle(ctx context.Context, outcomes []qstore.Settlement) (int, error) {
	rctx, cancel := RedisContext(ctx, j.cfg.RedisTimeout)
	defer cancel()
	st, err := j.q.Settle(rctx, outcomes...)
	settled := st.Acked + st.Retried + st.Dead
	if len(st.Lost) > 0 && err == nil {
		// Not silent: the dashboards should show handled work thrown away.
		err = fmt.Errorf("%w: %d of %d items' leases ended before they were settled (is the queue's Lease shorter than a batch?)",
			queue.ErrLeaseLost, len(st.Lost), len(outcomes))
	}
	return settled, err
}

func (j *drainJob) wrap(err error) error { return fmt.Errorf("jobs: %s: %w", j.name, err) }

type leaseGoneKey struct{}

// LeaseGone returns when the lease of the item whose handler's context is
// ctx has surely ended, by this process's clock, and true; false outside
// a Drain handler. An outcome settled after it is thrown away: a claim or
// Tidy hands the item back, or dead-letters it.
func LeaseGone(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(leaseGoneKey{}).(time.Time)
	return t, ok
}
